#!/usr/bin/env bash
# Installs what the local Kafka broker (integration/kafka_broker.py), the local ZooKeeper
# (integration/zookeeper.py) and the Spark-Kafka benchmark need: Apache Kafka's runtime jars, Apache ZooKeeper's
# jars and Spark's spark-sql-kafka-0-10 jars, resolved by Maven from Maven Central into
# integration/target/{kafka-libs,zookeeper-libs,spark-kafka-libs}.
#
#   integration/install.sh                   # every set (Kafka, ZooKeeper, Spark-Kafka, Kudu, HBase, HDFS)
#   integration/install.sh --kafka-only      # just the broker
#   integration/install.sh --zookeeper-only  # just ZooKeeper
#   integration/install.sh --kudu-only       # just Kudu (native daemons from kudu-binary + the Java client jars)
#   integration/install.sh --hbase-only      # just HBase 2.6.1 standalone + its Thrift gateway (about 108 MB)
#   integration/install.sh --hdfs-only       # just Hadoop 3.5.0's HDFS minicluster (about 110 MB)
#   integration/install.sh --force           # resolve again even if up to date
#
# Idempotent: a set whose stamp matches pom.xml is left alone, and its smoke check (a JVM printing the version) is
# not run again: a no-op rerun starts one JVM (java -version), about a second on a quiet machine.
# Works offline once ~/.m2 holds the artifacts (Maven is tried with -o first).
# Needs Java 17+ and Maven; if either is missing and apt-get is usable as root, installs
# Debian's openjdk-17-jdk-headless / maven.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM="$HERE/pom.xml"
TARGET="$HERE/target"
LOG="$TARGET/install.log"

KAFKA_ONLY=0
ZOOKEEPER_ONLY=0
HBASE_ONLY=0
HDFS_ONLY=0
KUDU_ONLY=0
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --kafka-only) KAFKA_ONLY=1 ;;
    --zookeeper-only) ZOOKEEPER_ONLY=1 ;;
    --kudu-only) KUDU_ONLY=1; KAFKA_ONLY=0 ;;
    --hbase-only) HBASE_ONLY=1 ;;
    --hdfs-only) HDFS_ONLY=1 ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# HBase (HDFS) is wanted by a plain run or --hbase-only (--hdfs-only); either alone skips every other set.
PLAIN_RUN=$(( (1 - KAFKA_ONLY) * (1 - ZOOKEEPER_ONLY) * (1 - KUDU_ONLY) * (1 - HBASE_ONLY) * (1 - HDFS_ONLY) ))
WANT_HBASE=$(( HBASE_ONLY || PLAIN_RUN ))
WANT_HDFS=$(( HDFS_ONLY || PLAIN_RUN ))
if [ "$HBASE_ONLY" = 1 ] || [ "$HDFS_ONLY" = 1 ]; then KAFKA_ONLY=1; ZOOKEEPER_ONLY=1; fi

say() { printf '[install] %s\n' "$*"; }
die() { printf '[install] ERROR: %s\n' "$*" >&2; exit 1; }

java_major() {
  # prints the major version of the given java, or nothing
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.\([0-9]*\)\)\{0,1\}.*/\1 \3/p' | head -n1 |
    awk '{ if ($1 == 1) print $2; else print $1 }'
}

find_java() {
  local cand
  for cand in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)"; do
    [ -n "$cand" ] && [ -x "$cand" ] || continue
    if [ "$(java_major "$cand")" -ge 17 ] 2>/dev/null; then echo "$cand"; return 0; fi
  done
  return 1
}

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian package(s): $* (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } \
      >"${TMPDIR:-/tmp}/kafka-install-apt.log" 2>&1 \
      || die "apt-get install $* failed; see ${TMPDIR:-/tmp}/kafka-install-apt.log"
  else
    return 1
  fi
}

# ---------------------------------------------------------------------------------------- prerequisites
JAVA="$(find_java || true)"
if [ -z "$JAVA" ]; then
  apt_install openjdk-17-jdk-headless || die "Java 17+ not found (set JAVA_HOME or put java on PATH)"
  JAVA="$(find_java || true)"
  [ -n "$JAVA" ] || die "Java 17+ still not found after installing openjdk-17-jdk-headless"
fi
if ! command -v mvn >/dev/null 2>&1; then
  apt_install maven || die "Maven (mvn) not found; install Maven 3.6+"
fi
# Let Maven run on the same JDK we checked.
export JAVA_HOME="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$JAVA")")")}"
say "java: $JAVA (Java $(java_major "$JAVA")), maven: $(command -v mvn)"

mkdir -p "$TARGET"
: >"$LOG"
POM_SUM="$(sha256sum "$POM" | cut -c1-16)"

# resolve NAME DIR [maven args...]: copy one jar set into DIR unless its stamp says it is current.
resolve() {
  local name="$1" dir="$2"; shift 2
  local stamp="$dir/.installed"
  if [ "$FORCE" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$POM_SUM" ] \
     && compgen -G "$dir/*.jar" >/dev/null; then
    say "$name: up to date ($(ls "$dir"/*.jar | wc -l) jars in ${dir#"$HERE"/})"
    return 0
  fi
  say "$name: resolving jars with Maven ..."
  local t0=$SECONDS tmp="$dir.tmp"
  rm -rf "$tmp"
  local mvn_args=(-B -q -f "$POM" "-Dlibs.dir=$tmp" -Dstyle.color=never "$@" dependency:copy-dependencies)
  {
    echo "== $name: mvn -o ${mvn_args[*]}"
  } >>"$LOG"
  if ! mvn -o "${mvn_args[@]}" >>"$LOG" 2>&1; then
    say "$name: not all artifacts in the local Maven repository yet; downloading from Maven Central ..."
    echo "== $name: mvn ${mvn_args[*]}" >>"$LOG"
    rm -rf "$tmp"
    if ! mvn "${mvn_args[@]}" >>"$LOG" 2>&1; then
      sed 's/\x1b\[[0-9;]*m//g' "$LOG" | grep -E '^\[ERROR\] .*(resolve|plugin|Could not|artifact|Failure|transfer)' \
        | awk '!seen[$0]++' | head -n 10 >&2 || true
      die "$name: Maven could not resolve the jars from Maven Central or ~/.m2 (is the network up?" \
          "full log: $LOG)"
    fi
  fi
  compgen -G "$tmp/*.jar" >/dev/null || die "$name: Maven succeeded but copied no jars (log: $LOG)"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "$POM_SUM" >"$stamp"
  say "$name: $(ls "$dir"/*.jar | wc -l) jars, $(du -sh "$dir" | cut -f1) in ${dir#"$HERE"/} ($((SECONDS - t0))s)"
}

# smoke DIR CMD...: what CMD prints (a version), run once per resolved set: kept in DIR/.smoke with the stamp, so a
# no-op rerun starts no JVM for it (resolving the set again replaces DIR, and with it the kept answer).
# Callers keep the first line with `sed -n 1p`, never `head -n1`: head closes the pipe early, smoke's printf then
# fails with EPIPE, and under pipefail the whole check fails now and then.
smoke() {
  local dir="$1"; shift
  local kept="$dir/.smoke" out
  if [ "$FORCE" = 0 ] && [ -f "$kept" ] && [ "$(head -n1 "$kept")" = "$POM_SUM" ]; then
    tail -n +2 "$kept"
    return 0
  fi
  out="$("$@" 2>>"$LOG")" || return 1
  { echo "$POM_SUM"; printf '%s\n' "$out"; } >"$kept"
  printf '%s\n' "$out"
}

# --kudu-only: neither Kafka nor ZooKeeper; --kafka-only / --zookeeper-only: no Kudu.
WANT_KUDU=$(( KUDU_ONLY || (1 - KAFKA_ONLY) * (1 - ZOOKEEPER_ONLY) ))
if [ "$KUDU_ONLY" = 1 ]; then ZOOKEEPER_ONLY=1; KAFKA_ONLY=1; fi  # skips the Kafka/ZooKeeper blocks below

if [ "$ZOOKEEPER_ONLY" = 0 ]; then
  resolve "Kafka broker" "$TARGET/kafka-libs" -P kafka
fi
if [ "$KAFKA_ONLY" = 0 ]; then
  resolve "ZooKeeper" "$TARGET/zookeeper-libs" -P zookeeper
fi
if [ "$KAFKA_ONLY" = 0 ] && [ "$ZOOKEEPER_ONLY" = 0 ]; then
  resolve "Spark Kafka source" "$TARGET/spark-kafka-libs" -P spark-kafka
fi

# ------------------------------------------------------------------------------------------ smoke check
if [ "$ZOOKEEPER_ONLY" = 0 ]; then
  CORE="$(ls "$TARGET"/kafka-libs/kafka_2.13-*.jar 2>/dev/null | head -n1)"
  [ -n "$CORE" ] || die "kafka_2.13 jar missing from $TARGET/kafka-libs"
  VERSION="$(smoke "$TARGET/kafka-libs" "$JAVA" -Xmx128m -cp "$TARGET/kafka-libs/*" kafka.Kafka --version | tail -n1)" \
    || die "the Kafka jars do not run (java -cp ... kafka.Kafka --version failed; log: $LOG)"
  say "done: Apache Kafka $VERSION ready; start one with: python -m integration.kafka_broker --port 9092"
fi
if [ "$KAFKA_ONLY" = 0 ]; then
  ZK="$TARGET/zookeeper-libs"
  # The two "provided" jars whose absence fails quietly at run time (see integration/README.md).
  for jar in zookeeper-3 metrics-core- snappy-java- logback-classic-; do
    compgen -G "$ZK/$jar*.jar" >/dev/null || die "$jar*.jar missing from $ZK (run with --force)"
  done
  ZK_VERSION="$(smoke "$ZK" "$JAVA" -Xmx64m -cp "$ZK/*" org.apache.zookeeper.version.VersionInfoMain | tail -n1)" \
    || die "the ZooKeeper jars do not run (java -cp ... VersionInfoMain failed; log: $LOG)"
  say "done: $ZK_VERSION ready; start one with: python -m integration.zookeeper --port 2181"
fi

# ------------------------------------------------------------------------------------------------- Kudu
if [ "$WANT_KUDU" = 1 ]; then
  # Java client jars for JPype (spyt_queue.sinks.kudu.client), and the kudu-binary jar with the native daemons.
  resolve "Kudu client" "$TARGET/kudu-client-libs" -P kudu-client
  resolve "Kudu binaries" "$TARGET/kudu-binary-jar" -P kudu-binary
  KUDU_VERSION="$(sed -n 's:.*<kudu.version>\(.*\)</kudu.version>.*:\1:p' "$POM")"
  KUDU_HOME="$TARGET/kudu-$KUDU_VERSION"
  BIN_JAR="$(ls "$TARGET"/kudu-binary-jar/kudu-binary-*-linux-x86_64.jar 2>/dev/null | head -n1)"
  [ -n "$BIN_JAR" ] || die "kudu-binary jar missing from $TARGET/kudu-binary-jar (run with --force)"
  if [ "$FORCE" = 1 ] || [ ! -f "$KUDU_HOME/.unpacked" ] || [ "$(cat "$KUDU_HOME/.unpacked")" != "$POM_SUM" ]; then
    rm -rf "$KUDU_HOME" "$KUDU_HOME.tmp"
    # Unzip with Python (no unzip binary needed); the jar keeps no exec bits, so set them on bin/*.
    python3 - "$BIN_JAR" "$KUDU_HOME.tmp" <<'PY' || die "could not unpack $BIN_JAR"
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
    mv "$KUDU_HOME.tmp"/kudu-binary-*-linux-x86_64 "$KUDU_HOME"
    rm -rf "$KUDU_HOME.tmp"
    chmod +x "$KUDU_HOME"/bin/*
    echo "$POM_SUM" >"$KUDU_HOME/.unpacked"
  fi
  # Smoke check with the environment integration/kudu.py uses (bundled libs first, SASL plugins from lib/sasl2).
  KUDU_V="$(LD_LIBRARY_PATH="$KUDU_HOME/lib" SASL_PATH="$KUDU_HOME/lib/sasl2" "$KUDU_HOME/bin/kudu" --version 2>>"$LOG" \
            | head -n1)" || die "the Kudu binaries do not run ($KUDU_HOME/bin/kudu --version failed; log: $LOG)"
  compgen -G "$TARGET/kudu-client-libs/kudu-client-$KUDU_VERSION.jar" >/dev/null \
    || die "kudu-client-$KUDU_VERSION.jar missing from $TARGET/kudu-client-libs (run with --force)"
  say "done: $KUDU_V ready in ${KUDU_HOME#"$HERE"/}; start one with: python -m integration.kudu --port 7051"
fi

# ------------------------------------------------------------------------------------------------ HBase
if [ "$WANT_HBASE" = 1 ]; then
  # hbase-server + hbase-thrift 2.6.1 and their runtime dependencies (Hadoop 2.10.2, reload4j): ~150 jars, 108 MB.
  resolve "HBase" "$TARGET/hbase-libs" -P hbase
  HBASE_VERSION="$(sed -n 's:.*<hbase.version>\(.*\)</hbase.version>.*:\1:p' "$POM")"
  HB="$TARGET/hbase-libs"
  for jar in "hbase-server-$HBASE_VERSION" "hbase-thrift-$HBASE_VERSION" hbase-zookeeper- zookeeper-3 reload4j-; do
    compgen -G "$HB/$jar*.jar" >/dev/null || die "$jar*.jar missing from $HB (run with --force)"
  done
  HB_V="$(smoke "$HB" "$JAVA" -Xmx128m -cp "$HB/*" org.apache.hadoop.hbase.util.VersionInfo | sed -n 1p)" \
    || die "the HBase jars do not run (java -cp ... VersionInfo failed; log: $LOG)"
  say "done: ${HB_V:-HBase $HBASE_VERSION} ready; start it with: python -m integration.hbase --port 9090"
fi

# ------------------------------------------------------------------------------------------------- HDFS
if [ "$WANT_HDFS" = 1 ]; then
  # hadoop-client-minicluster (NameNode + DataNode in one JVM, run by integration/hdfs.py), the client api/runtime
  # jars, the JUnit API its test utilities need at run time, slf4j-reload4j: about 110 MB.
  resolve "HDFS" "$TARGET/hdfs-libs" -P hdfs
  HADOOP_VERSION="$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$POM")"
  HD="$TARGET/hdfs-libs"
  for jar in "hadoop-client-minicluster-$HADOOP_VERSION" "hadoop-client-api-$HADOOP_VERSION" \
             "hadoop-client-runtime-$HADOOP_VERSION" junit-jupiter-api- reload4j-; do
    compgen -G "$HD/$jar*.jar" >/dev/null || die "$jar*.jar missing from $HD (run with --force)"
  done
  HD_V="$(smoke "$HD" "$JAVA" -Xmx128m -cp "$HD/*" org.apache.hadoop.util.VersionInfo | sed -n 1p)" \
    || die "the Hadoop jars do not run (java -cp ... VersionInfo failed; log: $LOG)"
  say "done: ${HD_V:-Hadoop $HADOOP_VERSION} HDFS minicluster ready; start one with: python -m integration.hdfs --port 8020"
fi
