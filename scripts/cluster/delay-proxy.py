#!/usr/bin/env python3
# The cluster profile's latency fault between the worker processes and the Temporal frontends
# (scripts/stack-cluster.sh puts it on the workers' TEMPORAL_ADDRESS; scripts/cluster/faults.sh
# sets it). This machine's kernel has no netem qdisc (`tc qdisc add ... netem` answers "qdisc kind
# is unknown"), so the delay is added here, in user space: every chunk read from either side is
# written on after the current delay, in order (a one-way delay of D adds 2*D to a round trip).
# The delay is read from a file (milliseconds; absent or 0: none), re-read every 200 ms.
#   delay-proxy.py LISTEN_PORT TARGET_PORT DELAY_FILE      (both ends on 127.0.0.1)
import asyncio, os, sys, time

listen_port, target_port, delay_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
delay = 0.0

async def watch_delay():
    global delay
    while True:
        try:
            with open(delay_file) as f:
                delay = max(0.0, float(f.read().strip() or 0) / 1000)
        except (OSError, ValueError):
            delay = 0.0
        await asyncio.sleep(0.2)

async def pipe(reader, writer):
    queue = asyncio.Queue()
    async def read():
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic() + delay, data))
        finally:
            queue.put_nowait((0, None))
    async def write():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()

async def handle(client_reader, client_writer):
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection('127.0.0.1', target_port)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer), return_exceptions=True)

async def main():
    asyncio.get_running_loop().create_task(watch_delay())
    server = await asyncio.start_server(handle, '127.0.0.1', listen_port)
    async with server:
        await server.serve_forever()

asyncio.run(main())
