"""The API's name is resolved once, into the run's `Target`: the prober, the clients and
the connect check all use that one adapter (issue 42: it was resolved five times)."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from evalkit.errors import UsageError
from evalkit.probe.apis.base import ADAPTERS, AnthropicMessages
from evalkit.probe.client.clients import Target, make_client
from evalkit.probe.client.stream import Prober


def test_the_prober_sends_through_the_targets_adapter() -> None:
    target = Target(base_url="http://127.0.0.1:9", model="m", api="anthropic-messages")
    assert isinstance(target.adapter, AnthropicMessages)
    assert Prober(target, origin_ns=0, run_tag="t").adapter is target.adapter
    # the API's own auth and headers come from it
    assert target.auth_style == "x-api-key"
    assert make_client(target).headers["anthropic-version"]


def test_an_unknown_api_is_a_usage_error_as_the_target_is_made() -> None:
    with pytest.raises(UsageError, match="unknown --api 'nope'; choose one of openai-chat"):
        Target(base_url="http://127.0.0.1:9", model="m", api="nope")


def test_the_adapter_follows_the_target() -> None:
    """A copy with another API resolves its own; a pickled target (Ray sends each shard's
    to its worker) arrives with the same adapter, and the adapter is not part of equality
    or of the target's description."""
    target = Target(base_url="http://127.0.0.1:9", model="m")
    assert type(replace(target, api="openai-responses").adapter) is ADAPTERS["openai-responses"]
    back = pickle.loads(pickle.dumps(target))
    assert type(back.adapter) is type(target.adapter) and back == target
    assert "adapter" not in repr(target) and "adapter" not in target.describe()
