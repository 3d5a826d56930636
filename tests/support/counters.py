"""Token counters for tests: the real one, watched (which thread counted what) or held."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gateway.usage.tokens import TiktokenCounter, TokenCounter


@dataclass
class Counted:
    text_chars: int
    thread: str


@dataclass
class WatchedCounter:
    """Delegates to ``inner``; records each count, and holds counts of texts of at least
    ``hold_chars`` characters until ``release`` is set (``holding`` is set meanwhile)."""

    inner: TokenCounter = field(default_factory=TiktokenCounter)
    hold_chars: int | None = None
    counted: list[Counted] = field(default_factory=list)
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def estimated(self) -> bool:
        return self.inner.estimated

    def warm(self) -> None:
        self.inner.warm()

    def encoding_for(self, model_name: str) -> str:
        return self.inner.encoding_for(model_name)

    def count_text(self, text: str, model_name: str) -> int:
        self.counted.append(Counted(len(text), threading.current_thread().name))
        if self.hold_chars is not None and len(text) >= self.hold_chars:
            self.holding.set()
            self.release.wait(30)
        return self.inner.count_text(text, model_name)

    def threads_that_counted(self, at_least_chars: int) -> set[str]:
        return {c.thread for c in self.counted if c.text_chars >= at_least_chars}
