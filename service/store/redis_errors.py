"""redis-py failures as the store port's errors, for every Redis adapter."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from redis.exceptions import OutOfMemoryError, RedisClusterException, RedisError

from service.store.errors import StoreError, StoreFull

logger = logging.getLogger(__name__)


@contextmanager
def store_errors() -> Iterator[None]:
    """Turn every redis-py failure into StoreError (HTTP 503): StoreFull when Redis refused a
    write for lack of memory (a script with the ``#!lua`` shebang is refused before it runs)."""
    try:
        yield
    except OutOfMemoryError as error:
        logger.warning("redis is out of memory: writes are refused")
        raise StoreFull() from error
    except (RedisError, RedisClusterException) as error:
        logger.error("game store unavailable: %s: %s", type(error).__name__, error)
        raise StoreError() from error
