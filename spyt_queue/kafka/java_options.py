"""Options of Kafka's Java client that Spark users pass as ``kafka.*``, for librdkafka (confluent-kafka).

Spark's Kafka source and sink hand every ``kafka.*`` option to the Java client; ours hand them to librdkafka, which
knows most of the same names but refuses the ones below. Each has one verdict (:data:`JAVA_CLIENT_OPTIONS`):

* **translated** to librdkafka's name for the same setting (``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``), the value
  converted where the units differ (``buffer.memory`` bytes -> ``queue.buffering.max.kbytes``);
* **ignored with one warning** where it has no meaning here (JVM metrics, the JVM's TLS providers, timeouts of Java
  calls the adapter does not make): a query moved from ``format("kafka")`` runs unchanged;
* **refused** where ignoring it would change what the query does (a Java trust store, a Java callback class,
  Kafka transactions, another partitioner), with the librdkafka way to say it.

Names librdkafka knows pass through untouched (``acks``, ``linger.ms``, ``security.protocol``, ...), as do unknown
names, which librdkafka refuses with its own message. The table is in ``docs/kafka.md``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spyt_queue.errors import OptionError

log = logging.getLogger("spyt_queue.kafka")


@dataclass(frozen=True)
class JavaOption:
    """The verdict on one Java-client option: ``translate`` (to ``target``, the value through ``convert``),
    ``adapter`` (read by the adapter itself, not passed to librdkafka), ``ignore`` or ``refuse``; ``why`` says why
    in the docs and in the warning or error."""

    verdict: str
    why: str
    target: str | None = None
    convert: Callable[[str], Any] | None = None


def _os_default(value: str) -> str:
    """Java's ``-1`` (the operating system's default socket buffer) is librdkafka's ``0``."""
    return "0" if str(value).strip() == "-1" else str(value)


def _kilobytes(value: str) -> str:
    """Bytes (Java's ``buffer.memory``) as librdkafka's kilobytes, rounded up."""
    return str(max(1, math.ceil(int(str(value).strip()) / 1024)))


_JAAS = re.compile(
    r"^\s*org\.apache\.kafka\.common\.security\.(?:plain\.PlainLoginModule|scram\.ScramLoginModule)\s+required\s+(.*?);?\s*$",
    re.S,
)
_JAAS_FIELD = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_credentials(value: str, option: str = "kafka.sasl.jaas.config") -> dict[str, str]:
    """``sasl.username``/``sasl.password`` of a PLAIN or SCRAM ``sasl.jaas.config``; refuses other login modules."""
    match = _JAAS.match(str(value))
    fields = dict(_JAAS_FIELD.findall(match.group(1))) if match else {}
    if not match or "username" not in fields or "password" not in fields:
        raise OptionError(
            option,
            "only a PlainLoginModule or ScramLoginModule entry with username and password can be translated for "
            "librdkafka; for Kerberos or OAuth set kafka.sasl.mechanism with librdkafka's own sasl.* options",
        )
    return {"sasl.username": fields["username"], "sasl.password": fields["password"]}


_NO_JVM = "a setting of the JVM's client that librdkafka has no use for"
#: Every Java-client option librdkafka refuses by name, with its verdict.
JAVA_CLIENT_OPTIONS: dict[str, JavaOption] = {
    # translated: the same setting under librdkafka's name
    "fetch.max.wait.ms": JavaOption("translate", "librdkafka's name for it", "fetch.wait.max.ms"),
    "receive.buffer.bytes": JavaOption(
        "translate", "librdkafka's name for it (-1, the OS default, is 0)", "socket.receive.buffer.bytes", _os_default
    ),
    "send.buffer.bytes": JavaOption(
        "translate", "librdkafka's name for it (-1, the OS default, is 0)", "socket.send.buffer.bytes", _os_default
    ),
    "max.request.size": JavaOption("translate", "librdkafka's largest request", "message.max.bytes"),
    "buffer.memory": JavaOption(
        "translate", "the producer's local queue, in kilobytes", "queue.buffering.max.kbytes", _kilobytes
    ),
    "compression.gzip.level": JavaOption("translate", "librdkafka's compression level", "compression.level"),
    "sasl.jaas.config": JavaOption("translate", "PLAIN/SCRAM username and password as sasl.username/sasl.password"),
    "ssl.keystore.type": JavaOption("translate", "PKCS12 is librdkafka's keystore format; JKS is refused"),
    # read by the adapter itself
    "default.api.timeout.ms": JavaOption(
        "adapter", "as in Spark: bounds each of the adapter's offset, metadata and group-commit requests (30000)"
    ),
    # ignored: no meaning here
    "max.block.ms": JavaOption("ignore", "a full local queue makes the sink wait for deliveries, without a limit"),
    "metadata.max.idle.ms": JavaOption("ignore", "librdkafka refreshes metadata by topic.metadata.refresh.interval.ms"),
    "socket.connection.setup.timeout.max.ms": JavaOption(
        "ignore", "librdkafka uses socket.connection.setup.timeout.ms"
    ),
    "partitioner.adaptive.partitioning.enable": JavaOption(
        "ignore", "only changes how records without a key spread; librdkafka has its own sticky partitioning"
    ),
    "exclude.internal.topics": JavaOption("ignore", "subscribePattern never matches Kafka's internal topics"),
    "ssl.protocol": JavaOption("ignore", "librdkafka negotiates TLS with OpenSSL"),
    "ssl.enabled.protocols": JavaOption("ignore", "librdkafka negotiates TLS with OpenSSL"),
    "ssl.keymanager.algorithm": JavaOption("ignore", _NO_JVM),
    "ssl.trustmanager.algorithm": JavaOption("ignore", _NO_JVM),
    "ssl.secure.random.implementation": JavaOption("ignore", _NO_JVM),
    "metrics.sample.window.ms": JavaOption("ignore", _NO_JVM),
    "metrics.num.samples": JavaOption("ignore", _NO_JVM),
    "metrics.recording.level": JavaOption("ignore", _NO_JVM),
    "metric.reporters": JavaOption("ignore", _NO_JVM),
    # refused: ignoring them would change what the query does
    "ssl.truststore.location": JavaOption(
        "refuse", "librdkafka has no Java trust store: put the CA certificates in a PEM file, kafka.ssl.ca.location"
    ),
    "ssl.truststore.password": JavaOption("refuse", "librdkafka has no Java trust store: use kafka.ssl.ca.location"),
    "ssl.truststore.type": JavaOption("refuse", "librdkafka has no Java trust store: use kafka.ssl.ca.location"),
    "sasl.login.callback.handler.class": JavaOption(
        "refuse", "a Java class can not run here: use librdkafka's sasl.oauthbearer.* options"
    ),
    "sasl.client.callback.handler.class": JavaOption(
        "refuse", "a Java class can not run here: use librdkafka's sasl.* options"
    ),
    "partitioner.class": JavaOption(
        "refuse", "the sink places records as Java's default partitioner does (murmur2 of the key); set a partition "
        "column to choose partitions yourself"
    ),
    "partitioner.ignore.keys": JavaOption(
        "refuse", "the sink places keyed records by their key, as Java's default partitioner does"
    ),
    "transactional.id": JavaOption(
        "refuse", "the sink does not write in Kafka transactions (neither does Spark's); use an idempotent target"
    ),
}
_WARNED: set[str] = set()


def translate_java_options(config: Mapping[str, Any], prefix: str = "kafka.") -> dict[str, Any]:
    """``config`` (``kafka.*`` without the prefix) for librdkafka: Java-client names translated, ignored ones dropped
    with one warning per name and process, refused ones raising :class:`OptionError` naming ``<prefix><name>``."""
    result: dict[str, Any] = {}
    for key, value in config.items():
        option = JAVA_CLIENT_OPTIONS.get(str(key).lower())
        if option is None:
            result[key] = value
        elif option.verdict == "adapter":
            continue
        elif option.verdict == "refuse":
            raise OptionError(f"{prefix}{key}", f"is a Java client option librdkafka can not honour: {option.why}")
        elif option.verdict == "ignore":
            if key not in _WARNED:
                _WARNED.add(key)
                log.warning("%s%s has no effect with librdkafka and is ignored: %s", prefix, key, option.why)
        elif key == "sasl.jaas.config":
            result.update(jaas_credentials(value, f"{prefix}{key}"))
        elif key == "ssl.keystore.type":
            if str(value).strip().upper() != "PKCS12":
                raise OptionError(
                    f"{prefix}{key}",
                    "librdkafka reads PKCS#12 keystores only: convert the keystore (keytool -importkeystore "
                    "-deststoretype PKCS12) or use ssl.certificate.location + ssl.key.location",
                )
        else:
            assert option.target is not None
            result.setdefault(option.target, option.convert(value) if option.convert else value)
    return result
