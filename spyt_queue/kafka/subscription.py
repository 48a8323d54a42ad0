"""Which topic partitions a Kafka source reads: a value object shared by the options parser and the backend."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Subscription:
    """Which topic partitions to read: a topic list, a regular expression, or explicit partitions."""

    kind: str  # subscribe | subscribePattern | assign
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def describe(self) -> str:
        """A stable text form, used in the source id and the default group name."""
        if self.kind == "subscribe":
            return "subscribe=" + ",".join(sorted(self.topics))
        if self.kind == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return "assign=" + ";".join(f"{t}:{','.join(map(str, p))}" for t, p in sorted(self.assigned.items()))

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` belongs to the subscription (internal topics never do)."""
        if topic.startswith("__"):
            return False
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern or "", topic) is not None
        return topic in self.assigned


def split_key(key: str) -> tuple[str, int]:
    """``"topic:3"`` -> ``("topic", 3)``."""
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)

