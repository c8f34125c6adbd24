"""Opening learning from use as the settings ask: the assembly root (app.py) calls it and hands the log in."""

from __future__ import annotations

from ..settings import Settings
from .keys import KEY_FILE
from .log import UsageLog
from .prior import UsagePrior

__all__ = ["open_usage"]


def open_usage(settings: Settings) -> UsageLog | None:
    """The usage log `settings` ask for (`LAZYTOOLS_LEARN`), started: in Redis shared by replicas with a state
    URL (docs/scaling.md), else in SQLite under the cache directory; None with learning off."""
    if not settings.learn:
        return None
    prior = UsagePrior(min_others=settings.learn_min_principals, max_counted=settings.learn_max_counted,
                       max_per_source=settings.learn_max_per_source)
    if settings.state_url is not None:
        from .redis_store import open_redis  # redis is imported only where a state URL is set

        log = UsageLog(open_redis(settings.state_url.get_secret_value(), prefix=settings.state_prefix,
                                  timeout=settings.state_timeout, keep=settings.learn_shared_keep),
                       keep_requests=settings.learn_request_text, shared=True, poll=settings.learn_sync_interval,
                       prior=prior)
    else:
        from .sqlite import open_sqlite

        log = UsageLog(open_sqlite(settings.embedding_cache_dir()), keep_requests=settings.learn_request_text,
                       key_file=settings.embedding_cache_dir() / KEY_FILE, prior=prior)
    log.start()
    return log
