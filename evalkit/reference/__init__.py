"""The built-in reference endpoint: a local OpenAI-compatible server with known timing.

It models a continuous-batching inference engine (prefill, decode steps that slow down
as the batch grows, a KV-cache batch limit with a queue, an admission limit with 429s),
injects the faults real endpoints have, and can log every request's server-side timing
as ground truth. Profiles live in `profiles.json`.

    from evalkit.reference import ReferenceServer
    with ReferenceServer(profile="queueing", truth_log=path) as srv:
        ...  # srv.base_url, srv.model, srv.truth()
"""

from evalkit.reference.app import MODEL, ReferenceApp
from evalkit.reference.engine import EngineCore, simulate_closed_loop
from evalkit.reference.params import Profile, get_profile, load_profiles, param_specs
from evalkit.reference.server import ReferenceServer, serve

__all__ = [
    "MODEL",
    "EngineCore",
    "Profile",
    "ReferenceApp",
    "ReferenceServer",
    "get_profile",
    "load_profiles",
    "param_specs",
    "serve",
    "simulate_closed_loop",
]
