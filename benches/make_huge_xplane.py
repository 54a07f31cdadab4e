#!/usr/bin/env python3
"""Makes an XPlane larger than protobuf's 2 GiB message limit from a real one, for the
bounded-memory ingest check (benches/huge.sh): the input's planes are written once, then its
device planes are written again and again under new device ordinals (`/device:GPU:0` ->
`/device:GPU:8`, ...) until the file passes --min-bytes. Without device planes the largest
plane is repeated, renamed `<name> #k`. Pure byte surgery on the wire format (XSpace.planes =
field 1, XPlane.name = field 2), so every repeated plane is the input's real bytes.

With --one-plane the largest plane is made larger than --min-bytes itself instead: its lines
are repeated inside it, copy k under new line ids and with its line timestamps moved k hours
later (XPlane.lines = field 3; XLine.id = 1, XLine.timestamp_ns = 3), so that one plane holds
the copies one after another in time, as a long capture of one host would.

    benches/make_huge_xplane.py INPUT.xplane.pb OUTPUT.xplane.pb [--min-bytes 2300000000] [--one-plane]
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


def field_bytes(field, data):
    return encode_varint(field << 3 | 2) + encode_varint(len(data)) + bytes(data)


def line_layout(line):
    """An XLine as segments: ("raw", start, end) byte runs to copy as they are, and the id and
    timestamp as ("int", field, int64 value)."""
    segments = []
    for field, wt, s, e in fields(line):
        if wt == 0 and field in (1, 3):
            value, _ = varint(line, s + 1)
            segments.append(("int", field, value - ((value >> 63) << 64)))
        elif segments and segments[-1][0] == "raw" and segments[-1][2] == s:
            segments[-1] = ("raw", segments[-1][1], e)
        else:
            segments.append(("raw", s, e))
    return segments


def moved_line(line, segments, k, line_ids):
    """The XLine's bytes with a new id and its timestamp k hours later."""
    body = bytearray()
    for kind, a, b in segments:
        if kind == "raw":
            body += line[a:b]
        else:
            value = b + k * line_ids if a == 1 else b + k * 3_600_000_000_000
            body += bytes([a << 3]) + encode_varint(value & (1 << 64) - 1)
    return field_bytes(3, body)


def one_plane(data, planes, min_bytes, out):
    """The input with the lines of its plane with the most line bytes repeated in that plane
    until it passes min_bytes (the copies are made twice: sized, then written)."""
    def line_bytes(p):
        plane = payload(data, p[0])
        return sum(fe - fs for f, wt, fs, fe in fields(plane) if f == 3 and wt == 2)
    s, e = max(planes, key=line_bytes)
    if line_bytes((s, e)) == 0:
        raise SystemExit("no plane holds lines")
    plane = payload(data, s)
    head = bytearray()
    lines = []
    for field, wt, fs, fe in fields(plane):
        if field == 3 and wt == 2:
            line = payload(plane, fs)
            lines.append((line, line_layout(line)))
        else:
            head += plane[fs:fe]
    # Copies take ids apart from every original: the ids are int64 (thread ids can be any).
    line_ids = 1 << 40
    size, k = len(head), 0
    while size < min_bytes:
        size += sum(len(moved_line(l, seg, k, line_ids)) for l, seg in lines)
        k += 1
    for ps, pe in planes:
        if ps != s:
            out.write(data[ps:pe])
    out.write(b"\x0a" + encode_varint(size))
    out.write(head)
    for c in range(k):
        for l, seg in lines:
            out.write(moved_line(l, seg, c, line_ids))
    return k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--min-bytes", type=float, default=2.3e9)
    ap.add_argument("--one-plane", action="store_true")
    args = ap.parse_args()
    data = memoryview(open(args.input, "rb").read())
    planes = [(s, e) for f, wt, s, e in fields(data) if f == 1 and wt == 2]
    if args.one_plane:
        with open(args.output, "wb") as out:
            k = one_plane(data, planes, args.min_bytes, out)
        print(f"one plane of {k} copies of the largest plane's lines: {args.output}")
        return
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
