"""The JVM the Kudu client runs in (JPype): where the client jars are found, starting the JVM once per process, the
Java classes the client uses (:class:`JavaTypes`), and Java exceptions as :mod:`sinks.kudu.errors` errors.

The jars are found in this order: ``jars=`` given to :func:`start_jvm` (the sink's ``kudu.jars`` option reaches
executors this way); the environment variable ``SPYT_KUDU_JARS`` (a directory of jars, or jar paths separated by
``os.pathsep``; on a cluster ``spark.executorEnv.SPYT_KUDU_JARS``); ``integration/target/kudu-client-libs/`` of a
source checkout (what ``integration/install.sh`` fills).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import KuduError, KuduUnavailableError

KUDU_JARS_ENV = "SPYT_KUDU_JARS"
_REPO_JARS = Path(__file__).resolve().parents[2] / "integration" / "target" / "kudu-client-libs"


# ------------------------------------------------------------------------------------------------- JVM


_JVM_LOCK = threading.Lock()


def kudu_jars(jars: str | Sequence[str] | None = None) -> list[str]:
    """The client jars: ``jars`` (a directory or paths), else ``$SPYT_KUDU_JARS``, else the checkout's install."""
    spec: str | Sequence[str] | None = jars or os.environ.get(KUDU_JARS_ENV) or None
    paths: list[Path]
    if spec is None:
        paths = [_REPO_JARS]
    elif isinstance(spec, str):
        paths = [Path(p) for p in spec.split(os.pathsep) if p]
    else:
        paths = [Path(p) for p in spec]
    found: list[str] = []
    for p in paths:
        if p.is_dir():
            found.extend(str(j) for j in sorted(p.glob("*.jar")))
        elif p.is_file():
            found.append(str(p))
    if not any(Path(j).name.startswith("kudu-client-") for j in found):
        where = ", ".join(str(p) for p in paths)
        raise KuduUnavailableError(
            f"no kudu-client jar found in {where}: run integration/install.sh --kudu-only, or point "
            f"{KUDU_JARS_ENV} (or the sink option kudu.jars) at a directory holding kudu-client and its dependencies"
        )
    return found


def start_jvm(jars: str | Sequence[str] | None = None) -> Any:
    """Start the in-process JVM with the Kudu client jars once per process; returns the ``jpype`` module.

    A JVM already started (by an earlier call, or by another JPype user of this process that put the jars on its
    class path) is reused."""
    try:
        # lazy: JPype (the kudu extra) and its JVM load only where Kudu is used
        import jpype
        import jpype.config
    except ImportError:
        raise KuduUnavailableError("JPype1 is not installed: pip install 'spyt-queue[kudu]'") from None
    with _JVM_LOCK:
        if not jpype.isJVMStarted():
            classpath = kudu_jars(jars)
            # The Kudu client keeps non-daemon threads (netty, reconnect timers): destroying the JVM at interpreter
            # exit would wait for them forever once the cluster is gone. Nothing needs flushing at exit (every
            # session is flushed before a task reports), so the process exits without destroying the JVM.
            jpype.config.destroy_jvm = False
            # -Xrs: leave SIGINT/SIGTERM to Python (Ctrl-C, Spark killing its workers).
            jpype.startJVM("-Xrs", "-Xmx512m", classpath=classpath, convertStrings=False)
        elif not jpype.JClass("java.lang.Thread").isAttached():
            jpype.java.lang.Thread.attach()
    try:
        jpype.JClass("org.apache.kudu.client.KuduClient")
    except Exception as exc:  # the JVM was started without our jars
        raise KuduUnavailableError(f"the JVM of this process has no Kudu client on its class path ({exc})") from None
    return jpype


def java_error(exc: BaseException) -> str:
    msg = getattr(exc, "getMessage", None)
    return str(msg()) if callable(msg) else str(exc)


def status_transient(status: Any) -> bool:
    try:
        return bool(
            status.isTimedOut() or status.isServiceUnavailable() or status.isNetworkError() or status.isAborted()
        )
    except Exception:
        return False


def kudu_error(what: str, exc: Any) -> KuduError:
    """A :class:`KuduError` for a Java ``KuduException``, transient when its status says so."""
    status = exc.getStatus() if hasattr(exc, "getStatus") else None
    transient = status_transient(status) if status is not None else False
    return KuduError(f"Kudu {what} failed: {java_error(exc)}", transient=transient)


# --------------------------------------------------------------------------------------------- types


class JavaTypes:
    """Java classes and per-type converters, resolved once the JVM runs."""

    def __init__(self, jpype: Any) -> None:
        J = jpype.JClass
        self.jpype = jpype
        self.Type = J("org.apache.kudu.Type")
        self.Schema = J("org.apache.kudu.Schema")
        self.ColumnSchemaBuilder = J("org.apache.kudu.ColumnSchema$ColumnSchemaBuilder")
        self.ColumnTypeAttributesBuilder = J("org.apache.kudu.ColumnTypeAttributes$ColumnTypeAttributesBuilder")
        self.CreateTableOptions = J("org.apache.kudu.client.CreateTableOptions")
        self.KuduClientBuilder = J("org.apache.kudu.client.KuduClient$KuduClientBuilder")
        self.KuduPredicate = J("org.apache.kudu.client.KuduPredicate")
        self.ComparisonOp = J("org.apache.kudu.client.KuduPredicate$ComparisonOp")
        self.FlushMode = J("org.apache.kudu.client.SessionConfiguration$FlushMode")
        self.KuduException = J("org.apache.kudu.client.KuduException")
        self.ArrayList = J("java.util.ArrayList")
        self.BigDecimal = J("java.math.BigDecimal")
        self.LocalDate = J("java.time.LocalDate")
        self.SqlDate = J("java.sql.Date")
        self.JLong, self.JInt, self.JShort, self.JByte = jpype.JLong, jpype.JInt, jpype.JShort, jpype.JByte
        self.JFloat, self.JDouble, self.JBoolean = jpype.JFloat, jpype.JDouble, jpype.JBoolean
        self.Long, self.Integer = J("java.lang.Long"), J("java.lang.Integer")
        self.Short, self.Byte = J("java.lang.Short"), J("java.lang.Byte")
        self.Float, self.Double, self.Boolean = J("java.lang.Float"), J("java.lang.Double"), J("java.lang.Boolean")
        self.String = J("java.lang.String")
        self.ByteArray = jpype.JArray(jpype.JByte)
        self.PartialRow = J("org.apache.kudu.client.PartialRow")
        add_var_length = self.PartialRow.class_.getDeclaredMethod(
            "addVarLengthData", jpype.JInt.class_, self.ByteArray.class_
        )
        add_var_length.setAccessible(True)
        self._add_var_length = add_var_length

    def add_var_length_data(self, row: Any, index: Any, data: Any) -> None:
        """``PartialRow.addVarLengthData`` (private): set a STRING/VARCHAR/BINARY cell to ``data`` as is."""
        self._add_var_length.invoke(row, index, data)


_TYPES: JavaTypes | None = None


def java_types(jars: str | Sequence[str] | None = None) -> JavaTypes:
    global _TYPES
    if _TYPES is None:
        _TYPES = JavaTypes(start_jvm(jars))
    return _TYPES
