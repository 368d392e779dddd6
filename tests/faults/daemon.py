"""A real nkid on a private socket and state directory, for make faults,
make soak and tests/fuzz/seeds.py (the Python twin of tests/func/lib.sh)."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from nkid.client import Client

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Nkid:
    """nkid started on DIR/nkid.sock with --state-dir DIR/state; the log
    goes to DIR/nkid.log. ``start()`` waits until it answers a ping."""

    def __init__(self, build="build", config=None, env=None, workdir=None, args=()):
        self.bin = os.path.join(TOP, build, "bin", "nkid")
        self.ctl = os.path.join(TOP, build, "bin", "nkictl")
        self.dir = workdir or tempfile.mkdtemp(prefix="nkid-faults.")
        self.own_dir = workdir is None
        self.sock = os.path.join(self.dir, "nkid.sock")
        self.state = os.path.join(self.dir, "state")
        self.cache = os.path.join(self.state, "cache")
        self.logpath = os.path.join(self.dir, "nkid.log")
        self.config = config
        self.env = dict(os.environ, **(env or {}))
        self.args = list(args)
        self.proc = None
        self.preexec = None

    def write_config(self, obj):
        import json
        self.config = os.path.join(self.dir, "nkid.json")
        with open(self.config, "w") as f:
            json.dump(obj, f)
        return self.config

    def start(self, timeout=20, wait=True):
        cmd = [self.bin, "-s", self.sock, "--state-dir", self.state]
        if not self.config:     # never /etc/nkid/nkid.json
            self.write_config({})
        cmd += ["-c", self.config]
        cmd += self.args
        log = open(self.logpath, "ab")
        self.killed = False
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     env=self.env, preexec_fn=self.preexec)
        log.close()
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("nkid exited at start (%d): %s"
                                   % (self.proc.returncode, self.tail()))
            if os.path.exists(self.sock) and self.ctl_ok("--timeout", "1", "ping"):
                return
            time.sleep(0.05)
        raise RuntimeError("nkid did not serve within %d s: %s" % (timeout, self.tail()))

    def ctl_ok(self, *args):
        return subprocess.run([self.ctl, "-s", self.sock] + list(args),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def nkictl(self, *args, check=False, timeout=120):
        """Run nkictl against this nkid; returns CompletedProcess (text)."""
        return subprocess.run([self.ctl, "-s", self.sock] + list(args), capture_output=True,
                              text=True, check=check, timeout=timeout)

    def offline(self, *args, timeout=120):
        """nkictl on the state directory, without nkid."""
        return subprocess.run([self.ctl] + list(args[:2]) + ["--state-dir", self.state]
                              + list(args[2:]), capture_output=True, text=True, timeout=timeout)

    def client(self):
        return Client(self.sock)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        """Send sig; a deadly one marks the death as asked for."""
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            self.killed = True
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit status (None if not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def crash(self):
        """kill -9 and reap."""
        if self.proc is not None:
            self.kill(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def tail(self, n=20):
        try:
            with open(self.logpath, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def log_text(self):
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def nfds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def close(self):
        if self.proc is not None:
            self.crash()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
