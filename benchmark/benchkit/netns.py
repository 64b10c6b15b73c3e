"""A network namespace with a veth pair to the host, for the variants whose origin is "over a veth" (the origin's
packets then cross a real (virtual) link and the namespace's own network stack instead of the host's loopback)."""
import ipaddress
import os
import subprocess

from .processes import BenchFailure, log


def ip(*args, netns=None):
    command = (["ip", "netns", "exec", netns] if netns else []) + ["ip", *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchFailure(f"{' '.join(command)}: {result.stderr.strip()}")
    return result.stdout


def free_subnet():
    """A /30 in 10.254.0.0/16 that no address or route of the host uses."""
    used = ip("-4", "addr") + ip("-4", "route")
    taken = [ipaddress.ip_network(word, strict=False) for word in used.split() if "/" in word and word[0].isdigit()]
    for third in range(os.getpid() % 200, 256):
        for fourth in range(0, 256, 4):
            net = ipaddress.ip_network(f"10.254.{third}.{fourth}/30")
            if not any(net.overlaps(other) for other in taken) and f"10.254.{third}.{fourth + 1}" not in used:
                return net
    raise BenchFailure("no free /30 in 10.254.0.0/16 for the veth pair")


class Namespace:
    """`ip netns add imgfs-bench-<pid>`, a veth pair (host end `ibh<pid>`, the other end moved into the namespace),
    a /30 on the pair, both ends and the namespace's loopback up. `host_ip` is the host end, `ip` the namespace's end
    (where the origin listens). Recorded in Owned, which deletes both at the end, also after a failure."""

    def __init__(self, owned, commands=None):
        self.name = f"imgfs-bench-{os.getpid()}"
        host_end, ns_end = f"ibh{os.getpid()}", f"ibn{os.getpid()}"
        net = free_subnet()
        self.host_ip, self.ip = str(net[1]), str(net[2])
        ip("netns", "add", self.name)
        owned.add_netns(self.name)
        ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        owned.add_link(host_end)
        ip("link", "set", ns_end, "netns", self.name)
        ip("addr", "add", f"{self.host_ip}/30", "dev", host_end)
        ip("link", "set", host_end, "up")
        ip("addr", "add", f"{self.ip}/30", "dev", ns_end, netns=self.name)
        ip("link", "set", ns_end, "up", netns=self.name)
        ip("link", "set", "lo", "up", netns=self.name)
        self.description = (f"network namespace {self.name}, veth {host_end} ({self.host_ip}) ↔ {ns_end} "
                            f"({self.ip}), MTU {self.mtu(host_end)}")
        log(self.description)
        if commands is not None:
            commands["network namespace"] = (
                f"ip netns add {self.name}; ip link add {host_end} type veth peer name {ns_end}; "
                f"ip link set {ns_end} netns {self.name}; ip addr add {self.host_ip}/30 dev {host_end}; "
                f"ip link set {host_end} up; ip netns exec {self.name} ip addr add {self.ip}/30 dev {ns_end}; "
                f"ip netns exec {self.name} ip link set {ns_end} up; ip netns exec {self.name} ip link set lo up")

    @staticmethod
    def mtu(device):
        with open(f"/sys/class/net/{device}/mtu") as f:
            return f.read().strip()

    def prefix(self):
        """The command prefix that runs a program inside the namespace."""
        return ["ip", "netns", "exec", self.name]
