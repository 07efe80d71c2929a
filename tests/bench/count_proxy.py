#!/usr/bin/env python3
"""count_proxy.py LISTEN_PORT TARGET_PORT OUT_JSON

A TCP forwarder on 127.0.0.1 that counts the bytes it passes in each direction.
"up" is client -> target (controller to sshd), "down" is target -> client.
Bytes are counted as they are forwarded, so connections still open when it stops
(an ssh ControlPersist master, say) are included. On SIGTERM/SIGINT it writes
{"connections": N, "up": BYTES, "down": BYTES, "turns": T} to OUT_JSON and exits.
"turns" counts, per connection, the times the bytes changed direction (up after down or
down after up), summed: a round trip is two turns, so turns / 2 is the round trips the
run waited for (sshd's banner, sent first, counts as the first direction).
Connections that carried no byte at all (the readiness probe) are not counted.

It acknowledges what it reads at once (TCP_QUICKACK after every read) on both of its
sockets, so that it adds no stall of its own: sshd leaves Nagle on for sessions without
a terminal, and a small packet it sends while an earlier one is unacknowledged waits for
the reader's ACK, which Linux delays up to 40 ms. Through a proxy that delayed its ACKs,
every tool would wait that out on its connection's first channel, whatever its own client
does (turbo-play's acknowledges at once; OpenSSH's ssh, under Ansible and Mitogen, does
not, so this favours them if anything).
"""
import asyncio
import json
import os
import signal
import socket
import sys

LISTEN, TARGET, OUT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
totals = {"connections": 0, "up": 0, "down": 0, "turns": 0}


def quick_ack(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    except OSError:
        pass


async def pump(reader, reader_sock, writer, direction, seen):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            quick_ack(reader_sock)
            # A connection counts once the client speaks: the bench's readiness probe
            # (connect, read nothing, close) only ever sees sshd's banner.
            if direction == "up" and not seen[0]:
                seen[0] = True
                totals["connections"] += 1
            totals[direction] += len(data)
            if seen[1] is not None and seen[1] != direction:
                totals["turns"] += 1
            seen[1] = direction
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            writer.close()


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", TARGET)
    except OSError:
        client_writer.close()
        return
    # [the client has spoken, the direction bytes last went]
    seen = [False, None]
    client_sock = client_writer.get_extra_info("socket")
    server_sock = server_writer.get_extra_info("socket")
    await asyncio.gather(
        pump(client_reader, client_sock, server_writer, "up", seen),
        pump(server_reader, server_sock, client_writer, "down", seen),
    )
    client_writer.close()
    server_writer.close()


def write_totals():
    with open(OUT, "w") as out:
        json.dump(totals, out)


async def main():
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    await stop.wait()
    # Written and gone at once: closing politely would wait for (or cancel, noisily) the
    # connections still open, and their bytes are already counted.
    write_totals()
    sys.stdout.flush()
    os._exit(0)


asyncio.run(main())
