"""``lsr-eval grid --launcher slurm`` on a real single-node SLURM cluster started here (munged, slurmctld, slurmd),
against the same configs trained by ``--launcher local``.

The cluster lives in a temporary folder on its own ports and munge socket, so it touches no system SLURM; every
daemon it starts is stopped by its pid. Needs Debian's ``slurm-wlm`` and ``munge`` (.ci/run installs them) and
root (``SlurmUser=root``); without them the test skips, except in CI, where it fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import torch
import yaml
from train_helpers import read_log, tiny_config

from lsr_eval.cli import main

REPO = Path(__file__).resolve().parents[2]
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel")


def _unavailable(message: str):
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(message + " (CI runs this test: .ci/run installs slurm-wlm and munge)")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _stop(pid: int, proc: subprocess.Popen | None = None) -> None:
    """SIGTERM ``pid`` (a daemon this module started), then SIGKILL after 10 s."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        if proc is not None and proc.poll() is not None:
            return
        if proc is None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


SLURM_CONF = """\
ClusterName=lsrtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A running one-node cluster: yields the path of its slurm.conf (set SLURM_CONF to use it)."""
    missing = [b for b in BINARIES if shutil.which(b, path=SBIN) is None]
    if missing:
        _unavailable(f"SLURM is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        _unavailable("the test cluster runs its daemons as root (SlurmUser=root); run the test as root")
    root = tmp_path_factory.mktemp("slurm")
    root.chmod(0o755)
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir()
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=socket.gethostname(), ctld_port=_free_port(), d_port=_free_port(),
                                      root=root))
    env = dict(os.environ, SLURM_CONF=str(conf), PATH=SBIN)
    started: list[tuple[int, subprocess.Popen | None]] = []
    try:
        subprocess.run([shutil.which("munged", path=SBIN), "--force", f"--socket={root}/munge/munge.socket",
                        f"--key-file={key}", f"--log-file={root}/log/munged.log", f"--pid-file={root}/munge/pid",
                        f"--seed-file={root}/munge/seed"], check=True, env=env, timeout=30)
        started.append((int((root / "munge" / "pid").read_text()), None))
        for daemon in ("slurmctld", "slurmd"):
            out = open(root / "log" / f"{daemon}.out", "w")
            proc = subprocess.Popen([shutil.which(daemon, path=SBIN), "-D", "-f", str(conf)]
                                    + (["-i"] if daemon == "slurmctld" else []),
                                    stdout=out, stderr=subprocess.STDOUT, env=env)
            out.close()
            started.append((proc.pid, proc))
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=env).stdout.strip()
            if state == "idle":
                break
            time.sleep(0.5)
        else:
            logs = "\n".join(p.read_text()[-1500:] for p in sorted((root / "log").glob("*")))
            pytest.fail(f"the test cluster's node did not become idle in 60 s (sinfo: {state!r}):\n{logs}")
        yield conf
    finally:
        subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True, timeout=30)
        for pid, proc in reversed(started):
            _stop(pid, proc)
        shutil.rmtree(root, ignore_errors=True)


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModelForMaskedLM

    return {k: v.detach() for k, v in AutoModelForMaskedLM.from_pretrained(folder).named_parameters()}


def test_slurm_array_trains_two_configs_like_the_local_launcher(slurm_cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster))
    monkeypatch.setenv("PATH", SBIN)
    # the array tasks inherit this environment (sbatch --export=ALL): this checkout, offline, one thread
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    paths = {}
    for launcher in ("slurm", "local"):
        for name, seed in (("a", 5), ("b", 6)):       # two distinct runs: the array must give each task its own
            cfg = tiny_config(tmp_path, f"{launcher}-{name}", steps=3, batch_size=4, dropout=0.0,
                              train={"seed": seed})
            paths[launcher, name] = tmp_path / f"{launcher}-{name}.yaml"
            paths[launcher, name].write_text(yaml.safe_dump(cfg))
    common = ["--set", "train.num_threads=1"]

    t0 = time.monotonic()
    rc = main(["grid", str(paths["slurm", "a"]), str(paths["slurm", "b"]), "--launcher", "slurm", "--gpus", "0",
               "--cpus", "1", "--time", "00:10:00", "--partition", "test", "--slurm-dir", str(tmp_path / "slurm"),
               "--wait"] + common)
    slurm_s = time.monotonic() - t0
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "2 array tasks" in out and "all 2 runs done" in out
    script = (tmp_path / "slurm" / "lsr-grid.sbatch").read_text()
    assert "#SBATCH --array=0-1" in script and "#SBATCH --partition=test" in script and "--gres" not in script
    task_logs = sorted((tmp_path / "slurm").glob("lsr-grid-*_*.out"))
    assert [p.name.rsplit("_", 1)[1] for p in task_logs] == ["0.out", "1.out"]
    for log in task_logs:
        assert "done: step 3" in log.read_text(), log.read_text()[-2000:]

    # submitted again: both are done, nothing goes to SLURM
    assert main(["grid", str(paths["slurm", "a"]), str(paths["slurm", "b"]), "--launcher", "slurm", "--gpus", "0",
                 "--slurm-dir", str(tmp_path / "slurm")] + common) == 0
    assert "nothing to submit" in capsys.readouterr().out

    assert main(["grid", str(paths["local", "a"]), str(paths["local", "b"]), "--launcher", "local"] + common) == 0
    assert "all 2 runs done" in capsys.readouterr().out

    start = _weights(tmp_path / "tiny-bert")
    final = {key: _weights(tmp_path / "work" / f"{key[0]}-{key[1]}" / "model") for key in paths}
    for name in ("a", "b"):
        s, loc = final["slurm", name], final["local", name]
        assert max(float((s[k] - start[k]).abs().max()) for k in s) > 1e-4       # trained
        for k in s:
            assert torch.equal(s[k], loc[k]), f"{name}: {k} differs between the SLURM task and the local run"
        log_s = read_log(tmp_path / "results" / f"slurm-{name}" / "log.jsonl")
        log_l = read_log(tmp_path / "results" / f"local-{name}" / "log.jsonl")
        assert [r["step"] for r in log_s] == [1, 2, 3]
        assert [r["loss"] for r in log_s] == [r["loss"] for r in log_l]
    # the two tasks ran different configs (seeds 5 and 6), not one config twice
    assert any(not torch.equal(final["slurm", "a"][k], final["slurm", "b"][k]) for k in start)
    print(f"SLURM array of 2 tiny runs: {slurm_s:.1f} s")
