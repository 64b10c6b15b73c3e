"""The origin (a private nginx on 127.0.0.1, or inside the run's network namespace) and the delay line in front of it
for the 20 ms rows."""
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
        listen {host}:{port} backlog=4096;
        root {root};
        autoindex on;
        location /throttled/ {{ limit_rate {rate}; }}
    }}
{tls}}}
"""

# nginx 1.22 (Debian 12) spells HTTP/2 as a listen parameter; `http2 on;` is 1.25.1+.
TLS_SERVER = """\
    server {{
        listen {host}:{port} ssl http2 backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:bench:10m;
        root {root};
        location /throttled/ {{ limit_rate {rate}; }}
    }}
"""


class Origin:
    """nginx serving root over HTTP/1.1 (`url`) and, with tls=(certificate, key), over HTTPS with HTTP/2 (`tls_url`).
    With netns (a Namespace) it runs inside that namespace (`ip netns exec`) and listens on the namespace's veth
    address; otherwise on 127.0.0.1."""

    def __init__(self, owned, work, root, netns=None, tls=None, name="nginx"):
        self.owned = owned
        self.work = os.path.join(work, name)
        os.makedirs(os.path.join(self.work, "nginx-tmp"))
        self.host = netns.ip if netns else "127.0.0.1"
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.conf_path = os.path.join(self.work, "nginx.conf")
        tls_block = TLS_SERVER.format(host=self.host, port=self.tls_port, cert=tls[0], key=tls[1], root=root,
                                      rate=THROTTLE_RATE) if tls else ""
        self.conf = NGINX_CONF.format(work=self.work, host=self.host, port=self.port, root=root, rate=THROTTLE_RATE,
                                      tls=tls_block)
        with open(self.conf_path, "w") as f:
            f.write(self.conf)
        self.access_log = os.path.join(self.work, "access.log")
        self.command = (netns.prefix() if netns else []) + ["nginx", "-p", self.work, "-c", self.conf_path]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.work, "nginx.out"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, "nginx", self.host)
        self.url = f"http://{self.host}:{self.port}"
        self.tls_url = f"https://{self.host}:{self.tls_port}" if tls else None

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


def wait_for_port(port, proc, name, host="127.0.0.1", timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchFailure(f"{name} exited with {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchFailure(f"{name} did not listen on {host}:{port}")


class DelayLine:
    """The user-space delay line (delay_line.py) in front of upstream_port, on the origin's host: 127.0.0.1, or inside
    the namespace on its veth address (then the bytes cross the veth, and the namespace's loopback to nginx).
    scheme "https" when upstream_port is nginx's TLS port (the line forwards TCP, TLS passes through)."""

    def __init__(self, owned, work, upstream_port, netns=None, scheme="http", name="delay-line"):
        self.owned = owned
        host = netns.ip if netns else "127.0.0.1"
        self.port = free_port()
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delay_line.py")
        self.command = (netns.prefix() if netns else []) + [
            sys.executable, script, str(self.port), str(upstream_port), str(ONE_WAY_DELAY), host]
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, f"{name}.log"), "w"))
        owned.add_process(self.proc)
        wait_for_port(self.port, self.proc, name, host)
        self.url = f"{scheme}://{host}:{self.port}"

    def stop(self):
        self.owned.stop_process(self.proc)
