"""A real Spark Connect server on loopback for tests and local use, started from the installed PySpark.

PySpark 4 ships the server (``jars/spark-connect_2.13-*.jar``) and, from 4.3 on PyPI, its launcher
(``sbin/start-connect-server.sh``; on 4.0-4.2 ``bin/spark-submit`` of the server's class, what that script runs).
This runs that launcher in the foreground (``--wait``) as a child process in its own process group, bound to
127.0.0.1 on a free port, with a ``local[N]`` master by default, its log, Spark scratch space, warehouse and the
launcher's pid file in a temporary directory that ``stop()`` removes. The server's driver Python
(``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON``) is this interpreter unless ``python=`` says otherwise, so the
Python data sources installed there (spyt-queue's ``pyspark_*`` modules) are discovered by the server.

    from integration.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()   # "sc://127.0.0.1:PORT"

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.spark_connect --port 15002

The client side needs ``pyspark[connect]``'s packages (``pip install 'spyt-queue[connect]'``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if __package__ in (None, ""):  # run as `python integration/spark_connect.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    find_java,
    port_accepts,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "CONNECT_REDACTION_REGEX",
    "CONNECT_SERVER_MAIN",
    "SparkConnectError",
    "SparkConnectServer",
    "SparkConnectUnavailableError",
    "client_requirements",
    "missing_requirements",
    "spark_home",
]

CONNECT_SERVER_MAIN = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: ``spark.sql.redaction.string.regex`` for a Connect server: an option whose name holds secret, password, token,
#: access key or pem, with its value, in the text form of a request's plan (``key: "token" value: "..."``).
CONNECT_REDACTION_REGEX = r'(?i)key: "[^"]*(?:secret|password|token|access[.]?key|pem)[^"]*"\s+value: "(?:[^"\\]|\\.)*"'
CLIENT_INSTALL_HINT = "pip install 'spyt-queue[connect]' (grpcio, grpcio-status, googleapis-common-protos, zstandard)"

_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n%ex
"""


class SparkConnectUnavailableError(JavaServerUnavailableError):
    """Java 17+, the server in the installed PySpark, or the client's packages are missing."""


class SparkConnectError(JavaServerError):
    """The server failed to start or died."""


#: The server's main class (what ``sbin/start-connect-server.sh`` submits).
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_home() -> Path | None:
    """The installed PySpark's directory when it holds the Connect server jar and a way to launch it (its
    ``sbin/start-connect-server.sh``, or ``bin/spark-submit``: PySpark 4.0 to 4.2 on PyPI ship the jar without the
    script), else None."""
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).resolve().parent
    launchers = (home / "sbin" / "start-connect-server.sh", home / "bin" / "spark-submit")
    return home if any(p.is_file() for p in launchers) and any((home / "jars").glob("spark-connect_*.jar")) else None


def client_requirements() -> str | None:
    """Why a Spark Connect client cannot run in this interpreter (a missing package and its install), or None."""
    try:
        import inspect

        from pyspark.sql.connect.utils import check_dependencies

        # PySpark 4.0 names the importing module (any but "__main__" checks the packages); 4.1+ takes nothing
        check_dependencies(*(["spyt"] if inspect.signature(check_dependencies).parameters else []))
    except Exception as error:  # ImportError, PySparkImportError: which package, at what version
        return f"the Spark Connect client's packages are missing ({error}); {CLIENT_INSTALL_HINT}"
    return None


def missing_requirements() -> str | None:
    """Why a server and a client cannot run here (for ``pytest.skip``), or None when they can."""
    return SparkConnectServer.unmet_requirements()


class SparkConnectServer(JavaServer):
    """One Spark Connect server on 127.0.0.1 (``port``: 0 or None picks a free one).

    ``master``: the server's Spark master (default ``local[2]``). ``python``: its ``PYSPARK_PYTHON`` and
    ``PYSPARK_DRIVER_PYTHON`` (default this interpreter). ``heap``: the driver's memory. ``config``: extra or
    overriding Spark settings (``DEFAULT_CONFIG``). ``env``: environment variables of the server (and so of its
    Python workers) to set, or with None to remove from what this process has. ``log_level``: the server log's level
    (default WARN; the log is ``work_dir/connect-server.log``).
    """

    NAME = "Spark Connect server"
    JARS_DESCRIPTION = "the Spark Connect server of the installed PySpark (sbin/start-connect-server.sh)"
    LOG_FILE = "connect-server.log"
    WORK_DIR_PREFIX = "spyt-spark-connect-"
    HEAP = "1g"
    STOP_TIMEOUT = 30.0
    Error = SparkConnectError
    UnavailableError = SparkConnectUnavailableError

    #: Spark settings besides the binding, the master and the directories; ``config=`` overrides any of them.
    DEFAULT_CONFIG: ClassVar[Mapping[str, object]] = {
        # Connect records each request's plan as text (event log, UI's Connect and SQL tabs), redacted only by this
        # regex, which Spark leaves unset: hide the values of options whose names are secret (token, *password*,
        # *secret*, access keys, inline PEM keys), keys included.
        "spark.sql.redaction.string.regex": CONNECT_REDACTION_REGEX,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stopTimeout": "30s",
    }

    port: int

    def __init__(
        self,
        port: int | None = None,
        master: str = "local[2]",
        python: str | None = None,
        env: Mapping[str, str | None] | None = None,
        **options: Unpack[ServerOptions],
    ) -> None:
        options.setdefault("log_level", "WARN")
        options.setdefault("start_timeout", 180.0)
        super().__init__({"port": port}, **options)
        self.master = master
        self.python = python or sys.executable
        self.env = dict(env or {})

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:PORT``: what ``SparkSession.builder.remote(...)`` takes."""
        return f"sc://{self.host}:{self.port}"

    @classmethod
    def classpath(cls, libs_dir: Path | str | None = None) -> list[Path]:
        """The server's jars: those of the installed PySpark ([] when it has no Connect server)."""
        home = spark_home()
        return sorted((home / "jars").glob("*.jar")) if home else []

    @classmethod
    def unmet_requirements(cls, libs_dir: Path | str | None = None) -> str | None:
        """Why the server or its client cannot run here, or None when both can."""
        if find_java() is None:
            return "no Java 17+ found (JAVA_HOME or PATH): Spark needs it"
        if spark_home() is None:
            return (
                "the installed PySpark has no Spark Connect server (sbin/start-connect-server.sh, jars/spark-connect_*)"
            )
        return client_requirements()

    def _write_configs(self) -> None:
        assert self.work_dir is not None
        conf_dir = self.work_dir / "conf"
        conf_dir.mkdir(exist_ok=True)
        (conf_dir / "log4j2.properties").write_text(_LOG4J2.format(level=self.log_level))

    def _command(self) -> list[str]:
        assert self.work_dir is not None and self.java is not None
        home = spark_home()
        assert home is not None
        settings = self._merged_config(
            {
                "spark.connect.grpc.binding.address": self.host,
                "spark.connect.grpc.binding.port": self.port,
                "spark.driver.host": self.host,
                "spark.driver.bindAddress": self.host,
                "spark.local.dir": self.work_dir / "local",
                "spark.sql.warehouse.dir": self.work_dir / "warehouse",
                "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.work_dir}",
            }
        )
        confs = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
        options = ["--master", self.master, "--driver-memory", self.heap, *confs]
        launcher = home / "sbin" / "start-connect-server.sh"
        if launcher.is_file():
            return [str(launcher), "--wait", *options]
        # what that script runs, in the foreground (spark-submit takes the server's class as an internal resource)
        return [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", self.NAME, *options]

    def _environment(self) -> dict[str, str | None]:
        """``env=`` (secrets such as ``YT_TOKEN`` included: they reach the process, never a file or a command line)
        and the launcher's variables."""
        assert self.work_dir is not None and self.java is not None
        home = spark_home()
        assert home is not None
        return {
            **self.env,
            "SPARK_HOME": str(home),
            "SPARK_CONF_DIR": str(self.work_dir / "conf"),  # our log4j2.properties, no spark-defaults.conf
            "SPARK_LOG_DIR": str(self.work_dir),
            "SPARK_PID_DIR": str(self.work_dir),
            "SPARK_LOCAL_IP": self.host,
            "JAVA_HOME": str(Path(self.java).resolve().parent.parent),
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
        }

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """Ready once a Connect client gets the Spark version back (the gRPC service starts after the session)."""

        def probe(remaining: float) -> str | None:
            if not port_accepts(self.host, self.port):
                return "port not open yet"
            from pyspark.sql.connect.client import SparkConnectClient

            client = SparkConnectClient(self.url)
            try:
                version = client._analyze(method="spark_version").spark_version
            except Exception as error:  # not serving yet
                return f"no answer to a Connect request: {error}"
            finally:
                client.close()
            return None if version else "no Spark version in the answer"

        return probe


def main(argv: list[str] | None = None) -> int:
    """``python -m integration.spark_connect``: run a server in the foreground until Ctrl-C."""
    parser = server_argument_parser(
        "python -m integration.spark_connect", "Run a Spark Connect server on 127.0.0.1.", 15002, "1g"
    )
    parser.add_argument("--master", default="local[2]", help="the server's Spark master (default local[2])")
    parser.set_defaults(timeout=180.0)  # a JVM, a SparkContext, then the gRPC service
    args = parser.parse_args(argv)
    server = SparkConnectServer(
        port=args.port, master=args.master, heap=args.heap, work_dir=args.data_dir, start_timeout=args.timeout
    )
    return run_in_foreground(server, f"Starting a Spark Connect server ({args.master}) ...", lambda: server.url)


if __name__ == "__main__":
    sys.exit(main())
