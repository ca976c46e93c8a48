#!/usr/bin/env python3
# tests/png_stats.py: a tiny PNG reader (standard library only: zlib, struct) for the
# report tests, which screenshot index.html with headless Chromium.
#
#   png_stats.py FILE.png                  prints "W H NONWHITE COLOURED" (pixels not near
#                                          white; pixels clearly coloured, not grey)
#   png_stats.py FILE.png crop Y H OUT.png writes rows [Y, Y+H) as a new PNG (for viewing)
#
# Handles 8-bit greyscale, RGB and RGBA, non-interlaced: what Chromium writes.
import struct
import sys
import zlib


def read(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        sys.exit('not a PNG: ' + path)
    pos, idat, ihdr = 8, b'', None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or interlace or ctype not in (0, 2, 6):
        sys.exit('unsupported PNG (depth %d, colour type %d, interlace %d)' % (depth, ctype, interlace))
    bpp = {0: 1, 2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def write(path, w, h, bpp, rows):
    ctype = {1: 0, 3: 2, 4: 6}[bpp]

    def chunk(kind, body):
        return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
    raw = b''.join(b'\x00' + r for r in rows)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, ctype, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(raw, 6)) + chunk(b'IEND', b''))


def main():
    w, h, bpp, rows = read(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == 'crop':
        y, n = int(sys.argv[3]), int(sys.argv[4])
        sel = rows[y:y + n]
        write(sys.argv[5], w, len(sel), bpp, sel)
        return
    nonwhite = coloured = 0
    for r in rows:
        for x in range(0, w * bpp, bpp):
            px = r[x:x + 3] if bpp >= 3 else r[x:x + 1] * 3
            if min(px) < 235:
                nonwhite += 1
            if max(px) - min(px) > 60:
                coloured += 1
    print(w, h, nonwhite, coloured)


main()
