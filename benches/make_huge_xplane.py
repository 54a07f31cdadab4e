#!/usr/bin/env python3
"""Makes an XPlane larger than protobuf's 2 GiB message limit from a real one, for the
bounded-memory ingest check (benches/huge.sh): the input's planes are written once, then its
device planes are written again and again under new device ordinals (`/device:GPU:0` ->
`/device:GPU:8`, ...) until the file passes --min-bytes. Without device planes the largest
plane is repeated, renamed `<name> #k`. Pure byte surgery on the wire format (XSpace.planes =
field 1, XPlane.name = field 2), so every repeated plane is the input's real bytes.

    benches/make_huge_xplane.py INPUT.xplane.pb OUTPUT.xplane.pb [--min-bytes 2300000000]
"""
import argparse
import re


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def encode_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(buf):
    """(field, wire_type, start, end) of each top-level field of a message."""
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = varint(buf, pos)
        field, wt = key >> 3, key & 7
        if wt == 0:
            _, pos = varint(buf, pos)
        elif wt == 1:
            pos += 8
        elif wt == 5:
            pos += 4
        elif wt == 2:
            n, pos = varint(buf, pos)
            pos += n
        else:
            raise ValueError(f"unsupported wire type {wt} at {start}")
        yield field, wt, start, pos


def payload(buf, start):
    _, pos = varint(buf, start)
    n, pos = varint(buf, pos)
    return buf[pos : pos + n]


def plane_name(plane):
    for field, wt, s, _ in fields(plane):
        if field == 2 and wt == 2:
            return bytes(payload(plane, s)).decode("utf-8", "replace")
    return ""


def renamed(plane, name):
    """The plane's bytes with its name replaced, as an XSpace.planes field."""
    body = bytearray()
    for field, wt, s, e in fields(plane):
        if field == 2 and wt == 2:
            continue
        body += plane[s:e]
    data = name.encode()
    body = b"\x12" + encode_varint(len(data)) + data + bytes(body)
    return b"\x0a" + encode_varint(len(body)) + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--min-bytes", type=float, default=2.3e9)
    args = ap.parse_args()
    data = memoryview(open(args.input, "rb").read())
    planes = [(s, e) for f, wt, s, e in fields(data) if f == 1 and wt == 2]
    device = re.compile(r"^(/device:(?!CUSTOM)[A-Za-z]+:)(\d+)$")
    repeat = [(s, e, plane_name(payload(data, s))) for s, e in planes]
    devices = [(s, e, n) for s, e, n in repeat if device.match(n)]
    if devices:
        repeat = devices
        top = max(int(device.match(n).group(2)) for _, _, n in devices) + 1
    else:
        repeat = [max(repeat, key=lambda p: p[1] - p[0])]
        top = 1
    written = 0
    with open(args.output, "wb") as out:
        out.write(data)
        written += len(data)
        k = 0
        while written < args.min_bytes:
            for s, e, name in repeat:
                m = device.match(name)
                new = f"{m.group(1)}{top + k}" if m else f"{name} #{top + k}"
                chunk = renamed(payload(data, s), new)
                out.write(chunk)
                written += len(chunk)
            k += 1
    print(f"{written} bytes, {len(planes) + k * len(repeat)} planes ({k} copies of {len(repeat)} plane(s)): {args.output}")


if __name__ == "__main__":
    main()
