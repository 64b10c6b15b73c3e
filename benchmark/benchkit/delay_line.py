#!/usr/bin/env python3
"""The delay line of the 20 ms variant, run as a process of its own by the benchmark:
    delay_line.py LISTEN_PORT UPSTREAM_PORT ONE_WAY_SECONDS [LISTEN_HOST]
listens on LISTEN_HOST (127.0.0.1 by default):LISTEN_PORT and forwards to LISTEN_HOST:UPSTREAM_PORT, holding
everything ONE_WAY_SECONDS in each direction."""
import asyncio
import signal
import sys

# The most bytes one direction of one connection holds back (the bandwidth-delay product of 3.2 GB/s at 10 ms).
MAX_HELD = 32 << 20


async def delay_line(listen_port, upstream_port, one_way, listen_host="127.0.0.1"):
    """A TCP proxy that holds every chunk one_way seconds in each direction, and a new connection 2 * one_way
    (the handshake's round trip): a stand-in for a link with 2 * one_way round-trip time, since this kernel has no
    netem (nor fq/etf, which could delay packets by departure time)."""
    loop = asyncio.get_running_loop()

    async def pump(reader, writer):
        # Bounded by bytes held, not by chunks: a bound of N chunks would cap a connection at N reads per one-way
        # delay, a rate that depends on how many bytes each read happens to return.
        queue = asyncio.Queue()
        held = 0
        room = asyncio.Event()
        room.set()

        async def produce():
            nonlocal held
            while True:
                await room.wait()
                try:
                    data = await reader.read(256 * 1024)
                except (ConnectionError, OSError):
                    data = b""
                held += len(data)
                if held >= MAX_HELD:
                    room.clear()
                queue.put_nowait((loop.time() + one_way, data))
                if not data:
                    return

        async def consume():
            nonlocal held
            while True:
                due, data = await queue.get()
                held -= len(data)
                if held < MAX_HELD:
                    room.set()
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if not data:
                    try:
                        writer.write_eof()
                    except (OSError, RuntimeError):
                        pass
                    return
                try:
                    writer.write(data)
                    await writer.drain()
                except (ConnectionError, OSError):
                    return

        await asyncio.gather(produce(), consume())

    async def handle(client_reader, client_writer):
        try:
            await asyncio.sleep(2 * one_way)
            up_reader, up_writer = await asyncio.open_connection(listen_host, upstream_port)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(pump(client_reader, up_writer), pump(up_reader, client_writer))
        finally:
            for writer in (client_writer, up_writer):
                try:
                    writer.close()
                except OSError:
                    pass

    server = await asyncio.start_server(handle, listen_host, listen_port, backlog=4096)
    async with server:
        await server.serve_forever()




if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listen, upstream, one_way = sys.argv[1:4]
    host = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
    asyncio.run(delay_line(int(listen), int(upstream), float(one_way), host))
