"""Caches whose missing values are loaded once however many callers ask for them at the same moment.

A worker that claims a batch of a wide fan-out's branches starts them all at once: each would otherwise
miss the cache and read the same thing (the run's plan, the branches' shared context) once per job.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ("LoadedOnce", "Lru")

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    def __init__(self, maxsize: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._maxsize = maxsize

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def pop(self, key: K) -> None:
        self._items.pop(key, None)

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._maxsize:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


class LoadedOnce(Generic[K, V]):
    """An LRU whose missing values are loaded once however many callers ask at the same moment."""

    def __init__(self, maxsize: int) -> None:
        self._items: Lru[K, V] = Lru(maxsize)
        self._loading: dict[K, asyncio.Future[V]] = {}

    def known(self, key: K) -> V | None:
        return self._items.get(key)

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        value = self._items.get(key)
        if value is not None:
            return value
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(load())
            loading.add_done_callback(functools.partial(self._loaded, key))
        return await asyncio.shield(loading)  # one caller cancelled does not cancel the others' load

    def put(self, key: K, value: V) -> None:
        self._items.put(key, value)

    def forget(self, key: K) -> None:
        self._items.pop(key)
        self._loading.pop(key, None)  # a load under way may read what is outdated now: not kept

    def clear(self) -> None:
        """Forget every value, and keep none of the loads under way (their callers still get them)."""
        self._items.clear()
        self._loading.clear()

    def _loaded(self, key: K, loading: asyncio.Future[V]) -> None:
        failed = loading.cancelled() or loading.exception() is not None  # (its callers are told the error)
        if self._loading.get(key) is loading:
            del self._loading[key]
            if not failed:
                self._items.put(key, loading.result())
