"""The origin (a private nginx on 127.0.0.1) and the delay line in front of it for the 20 ms variant."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse

from .settings import ONE_WAY_DELAY, THROTTLE_RATE
from .processes import BenchFailure, free_port


NGINX_CONF = """\
user root;
worker_processes 2;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    types {{ image/png png; image/jpeg jpg; image/webp webp; text/html html; }}
    default_type application/octet-stream;
    log_format bench '$msec|$request|$status|$body_bytes_sent|$server_protocol|$http_range';
    access_log {work}/access.log bench;
    client_body_temp_path {work}/nginx-tmp;
    proxy_temp_path {work}/nginx-tmp;
    fastcgi_temp_path {work}/nginx-tmp;
    uwsgi_temp_path {work}/nginx-tmp;
    scgi_temp_path {work}/nginx-tmp;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {root};
        autoindex on;
        location /throttled/ {{ limit_rate {rate}; }}
    }}
}}
"""


class Origin:
    def __init__(self, owned, work, root):
        self.owned = owned
        self.work = os.path.join(work, "nginx")
        os.makedirs(os.path.join(self.work, "nginx-tmp"))
        self.port = free_port()
        self.conf_path = os.path.join(self.work, "nginx.conf")
        self.conf = NGINX_CONF.format(work=self.work, port=self.port, root=root, rate=THROTTLE_RATE)
        with open(self.conf_path, "w") as f:
            f.write(self.conf)
        self.access_log = os.path.join(self.work, "access.log")
        self.command = ["nginx", "-p", self.work, "-c", self.conf_path]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "nginx.out"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "nginx")
        self.url = f"http://127.0.0.1:{self.port}"

    def log_offset(self):
        try:
            return os.path.getsize(self.access_log)
        except OSError:
            return 0

    def requests_since(self, offset):
        """The access log lines after offset: (method, path, status, bytes, protocol, range)."""
        with open(self.access_log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        entries = []
        for line in text.splitlines():
            parts = line.split("|")
            if len(parts) < 6:
                continue
            request = parts[1].split(" ")
            method, target = (request + ["", ""])[:2]
            entries.append((method, urllib.parse.urlsplit(target).path, int(parts[2]), int(parts[3]), parts[4],
                            parts[5]))
        return entries

    def stop(self):
        self.owned.stop_process(self.proc, signal.SIGQUIT)


def wait_for_port(port, proc, name, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchFailure(f"{name} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchFailure(f"{name} did not listen on 127.0.0.1:{port}")


class DelayLine:
    def __init__(self, owned, work, upstream_port):
        self.owned = owned
        self.port = free_port()
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delay_line.py")
        self.command = [sys.executable, script, str(self.port), str(upstream_port), str(ONE_WAY_DELAY)]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, "delay-line.log"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "delay line")
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.owned.stop_process(self.proc)
