"""What a probe run will do, decided once before anything is sent (`ProbePlan`).

`plan_run(config)` reads the workload and trace files, resolves the profile into settings,
plans the ramp from the questionnaire's claims (with one) and chooses the prompts' text
(the buyer's corpus, read once, else the public text). The CLI prints the result (and
`--dry-run` stops there); `run_probe` runs that same object, so what was printed is what
runs, and the files are read once. Bad options, a malformed workload or questionnaire and
a damaged corpus all fail here, before a run directory exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from evalkit.errors import UsageError
from evalkit.probe.plan.claims import Plan, client_streams_per_process, plan_probe, size_levels
from evalkit.probe.plan.prompttext import with_text
from evalkit.probe.plan.settings import ProbeConfig, SuiteSettings, resolve_settings
from evalkit.probe.plan.voice import VoicePlan, plan_voice, voice_setting_notes
from evalkit.probe.plan.workloads import with_workload
from evalkit.voice.records import VOICE_APIS


@dataclass(frozen=True)
class ProbePlan:
    """A run decided: its config with the workload, trace and prompt text read in, the
    settings it runs with, and the questionnaire's plan behind them (None without one)."""

    config: ProbeConfig
    settings: SuiteSettings
    plan: Plan | None
    #: a voice run's calls (`--api openai-realtime`): it runs them instead of the phases
    voice: VoicePlan | None = None


#: what a voice run does not take (a voice run sends audio, not text)
_NOT_FOR_VOICE = (("prompts_file", "--prompts"), ("workload_file", "--workload"),
                  ("conversations_file", "--conversations"), ("trace_file", "--trace"),
                  ("rate", "--rate"), ("ray", "--ray"), ("metrics_url", "--metrics-url"),
                  ("phases", "--phases"))


def plan_run(config: ProbeConfig) -> ProbePlan:
    """Decide the run `config` asks for; nothing is sent. A config already planned (its
    workload and text read) is planned again from what it holds, not from the files."""
    if config.api in VOICE_APIS:
        given = [flag for name, flag in _NOT_FOR_VOICE if getattr(config, name)]
        if given:
            raise UsageError(f"{', '.join(given)}: not for --api {config.api} (a voice run "
                             "sends the caller's audio in calls; --audio DIR gives yours)")
        settings, plan = _settings_and_plan(config)
        ramp = settings.ramp
        return ProbePlan(config, settings, plan, plan_voice(
            config.voice, ramp.levels, dict(ramp.min_requests), ramp.confirm_levels,
            ramp.claimed))
    if config.voice is not None:
        raise UsageError(f"--audio and the call options are for --api "
                         f"{' or '.join(VOICE_APIS)}")
    config = with_workload(config)
    settings, plan = _settings_and_plan(config)
    return ProbePlan(with_text(config), settings, plan)


def _settings_and_plan(config: ProbeConfig) -> tuple[SuiteSettings, Plan | None]:
    """The settings the run will use and, with a questionnaire, the plan behind them.

    With `config.interval_width` every ramp level is floored at the requests that bound
    the percentile it is judged on to that width (`evalkit.probe.plan.claims.size_levels`; a claim's
    own percentile where one names the level). Nothing is sent.
    """
    settings = resolve_settings(config)
    width = config.interval_width
    if width is not None and not 0 < width < 0.5:
        raise UsageError(f"an interval width is a share of the distribution between 0 and "
                         f"0.5 (0.05: a p90 known from about the p87.5 to the p92.5); got "
                         f"{width:g}")
    if config.questionnaire is None:
        if config.budget_requests is not None:
            raise UsageError("--budget plans the ramp from a questionnaire: give "
                             "--questionnaire FILE too")
        if width is not None:
            floors = size_levels(settings.ramp.levels, width, settings.ramp.min_requests)
            settings = replace(settings, ramp=replace(settings.ramp, min_requests=floors))
        return settings, None
    if config.budget_requests is not None and config.budget_requests < 1:
        raise UsageError("--budget must be a positive number of requests")
    from evalkit.questionnaire.load import load_questionnaire

    q = load_questionnaire(config.questionnaire)
    ramp = settings.ramp
    per_level = max(1, round(ramp.level_duration_s))  # a floor for the estimate
    plan = plan_probe(q, list(ramp.levels), max_concurrency=config.max_concurrency,
                      levels_given=config.levels is not None,
                      processes=_planned_workers(config),
                      prompt_given=config.prompt_tokens is not None,
                      budget_requests=config.budget_requests, default_requests=per_level,
                      interval_width=width,
                      per_process=client_streams_per_process(config.base_url),
                      voice=config.api in VOICE_APIS)
    if config.api in VOICE_APIS:
        plan = replace(plan, notes=plan.notes + tuple(voice_setting_notes(q, config.voice)))
    settings = replace(settings, ramp=replace(
        ramp, levels=tuple(plan.levels), max_concurrency=plan.max_concurrency,
        min_requests=dict(plan.min_requests),
        claimed=tuple(sorted({cl.concurrency for cl in plan.claims if cl.reachable}))))
    if plan.prompt_tokens:
        settings = replace(settings, prompt_tokens=plan.prompt_tokens)
    if plan.soak_concurrency and settings.soak.concurrency is None:
        settings = replace(settings, soak=replace(settings.soak,
                                                  concurrency=plan.soak_concurrency))
    return settings, plan


def _planned_workers(config: ProbeConfig) -> int:
    """Client processes the plan may count on before Ray is asked: --ray-workers, else a
    local instance's CPUs; a cluster's size is known only once joined (1 until then)."""
    if config.ray is None:
        return 1
    if config.ray_workers is not None:
        return config.ray_workers
    return (os.cpu_count() or 1) if config.ray == "auto" else 1
