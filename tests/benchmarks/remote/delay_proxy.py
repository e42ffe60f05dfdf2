#!/usr/bin/env python3
"""A TCP relay that holds every byte for a fixed delay in each direction.

    delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS

Listens on 127.0.0.1:LISTEN_PORT and relays each connection to
127.0.0.1:TARGET_PORT. What arrives from either side is written to the other
DELAY_MS milliseconds after it arrived, without holding back what arrives
meanwhile: the relay adds latency, as a long link does, not a limit on the
bytes in flight (those are left to TCP and to the protocol above it). For a
kernel without netem (tc qdisc ... netem delay); prints "ready" once it
listens.
"""
import asyncio
import sys
import time


async def pipe(reader, writer, delay):
    # One queue per direction: a reader that never waits for the writer, a
    # writer that sends each chunk once its time has come.
    queue = asyncio.Queue()

    async def read():
        while True:
            data = await reader.read(1 << 16)
            await queue.put((time.monotonic() + delay, data))
            if not data:
                return

    async def write():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(read(), write())
    except OSError:  # either side gone: the relay of this connection ends
        pass
    finally:
        writer.close()


async def main(listen_port, target_port, delay):
    async def relay(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay), pipe(server_reader, client_writer, delay)
        )

    server = await asyncio.start_server(relay, "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS")
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000))
