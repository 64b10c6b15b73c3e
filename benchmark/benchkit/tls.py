"""The HTTPS origin's certificates, made by the run with openssl: a CA of its own and a server certificate it signs
for the origin's addresses, and how imgfs and curl are told to trust that CA."""
import os
import subprocess

from .processes import BenchFailure


def openssl(*args):
    result = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchFailure(f"openssl {' '.join(args[:2])}: {result.stderr.strip()[-300:]}")


class Certificates:
    """A P-256 CA (`ca.pem`) and a server certificate (`server.pem`, key `server.key`) for the given IP addresses,
    valid two days, under directory."""

    def __init__(self, directory, addresses):
        os.makedirs(directory)
        path = lambda name: os.path.join(directory, name)  # noqa: E731
        self.ca, self.cert, self.key = path("ca.pem"), path("server.pem"), path("server.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", path("ca.key"), "-out", self.ca, "-days", "2", "-subj", "/CN=imgfs benchmark CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", self.key,
                "-out", path("server.csr"), "-subj", "/CN=imgfs benchmark origin")
        with open(path("server.ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                    f"subjectAltName={','.join(f'IP:{a}' for a in addresses)}\n")
        openssl("x509", "-req", "-in", path("server.csr"), "-CA", self.ca, "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", self.cert, "-days", "2", "-extfile", path("server.ext"))


def imgfs_trust_option(binary, ca):
    """imgfs's options to trust the run's CA: its CA-file option when this build has one (named in `mount --help`),
    else `--insecure` (then curl gets `--insecure` too: the same trust on both sides). Returns (imgfs options, curl
    options, a sentence for the report)."""
    text = subprocess.run([binary, "mount", "--help"], capture_output=True, text=True).stdout
    for option in ("--ca-file", "--cacert", "--ca-bundle", "--ca"):
        if f"{option} " in text or f"{option}=" in text:
            return [option, ca], ["--cacert", ca], f"imgfs `{option} <the run's CA>`, curl `--cacert <the run's CA>`"
    return (["--insecure"], ["--insecure"],
            "imgfs has no CA-file option: imgfs `--insecure` and curl `--insecure` (no certificate check on either)")
