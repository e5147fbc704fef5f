#!/usr/bin/env python3
"""plycmp.py — the interop test's helper: writes a random 3DGS .ply (`gen OUT N SEED`) and
compares the Gaussians of two .ply files (`cmp A B TOLERANCES`), Gaussian by Gaussian in file
order, each quantity in the space its tolerance is stated in:
  pos  position, absolute (scene units)       scale  log scale, absolute
  rot  normalized quaternion, up to sign      rgb    base colour 0.5 + C0 f_dc, absolute
  alpha  sigmoid(opacity), absolute           sh   SH rest coefficients, absolute ("-": not compared)
  up   mean y of A and of B must agree in sign and within pos + 1 % (catches a scene turned over)
  shrms  root mean square of the SH rest differences over all Gaussians (k-means palettes have
       no useful largest error)
TOLERANCES is "pos=1e-3,scale=0.04,...". With "order=pos" in it the Gaussians of B are first
matched to those of A by position (nearest within pos, one to one), for writers that reorder
them (.sog and .compressed.ply are in Morton order). `glb A B TOL` compares two .glb files with the
KHR_gaussian_splatting extension: the same attribute names, and every attribute's values within
TOL (rotations normalized, up to sign). Prints the largest difference of each and exits 1 when
one is over its tolerance. Standard library only."""
import math, random, struct, sys

C0 = 0.28209479177387814
SIZES = {"char": "b", "int8": "b", "uchar": "B", "uint8": "B", "short": "h", "int16": "h", "ushort": "H",
         "uint16": "H", "int": "i", "int32": "i", "uint": "I", "uint32": "I", "float": "f", "float32": "f",
         "double": "d", "float64": "d"}


def read_ply(path):
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    lines = data[:end].decode("ascii").splitlines()
    assert lines[0] == "ply", path
    fmt, elems = None, []
    for l in lines[1:]:
        w = l.split()
        if not w:
            continue
        if w[0] == "format":
            fmt = w[1]
        elif w[0] == "element":
            elems.append([w[1], int(w[2]), []])
        elif w[0] == "property":
            assert w[1] != "list", "list properties are not handled"
            elems[-1][2].append((w[2], SIZES[w[1]]))
    assert fmt == "binary_little_endian", f"{path}: {fmt}"
    off = end
    for name, count, props in elems:
        st = struct.Struct("<" + "".join(t for _, t in props))
        if name == "vertex":
            names = [p for p, _ in props]
            rows = [dict(zip(names, st.unpack_from(data, off + i * st.size))) for i in range(count)]
            return rows
        off += st.size * count
    raise SystemExit(f"{path}: no vertex element")


def gen(out, n, seed):
    r = random.Random(seed)
    names = ["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"] + [f"f_rest_{i}" for i in range(45)] + \
            ["opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"]
    with open(out, "wb") as f:
        f.write(("ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % n).encode())
        for p in names:
            f.write(b"property float %s\n" % p.encode())
        f.write(b"end_header\n")
        for i in range(n):
            # a scene with a clear up: most Gaussians above (negative y, the .ply's y is down)
            v = [r.uniform(-2, 2), r.uniform(-3, 0.5), r.uniform(-2, 2), 0, 0, 0]
            v += [r.uniform(-1.5, 1.5) for _ in range(3)] + [r.uniform(-0.3, 0.3) for _ in range(45)]
            v += [r.uniform(-4, 4)] + [r.uniform(-6, -1) for _ in range(3)]
            q = [r.uniform(-1, 1) for _ in range(4)]
            v += q
            f.write(struct.pack("<%df" % len(v), *v))


def sig(x):
    return 1 / (1 + math.exp(-max(-80.0, min(80.0, x))))


def quat(g):
    q = [g["rot_%d" % k] for k in range(4)]
    n = math.sqrt(sum(c * c for c in q)) or 1
    return [c / n for c in q]


def match_by_position(a, b, radius):
    """B reordered so that B[i] is the Gaussian nearest to A[i] (within radius), or None."""
    cell = max(2 * radius, 1e-6)
    key = lambda g: tuple(math.floor(g[c] / cell) for c in "xyz")
    grid = {}
    for j, g in enumerate(b):
        grid.setdefault(key(g), []).append(j)
    out, taken = [], set()
    for g in a:
        kx, ky, kz = key(g)
        best, bd = None, radius * radius
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    for j in grid.get((kx + dx, ky + dy, kz + dz), ()):
                        d = sum((g[c] - b[j][c]) ** 2 for c in "xyz")
                        if d <= bd and j not in taken:
                            best, bd = j, d
        if best is None:
            return None
        taken.add(best)
        out.append(b[best])
    return out


def cmp(a_path, b_path, tol_text):
    pairs = dict(t.split("=") for t in tol_text.split(","))
    order = pairs.pop("order", None)
    tol = {k: (None if v == "-" else float(v)) for k, v in pairs.items()}
    a, b = read_ply(a_path), read_ply(b_path)
    if len(a) != len(b):
        print(f"FAIL: {a_path} has {len(a)} Gaussians, {b_path} {len(b)}")
        return 1
    if order == "pos":
        b = match_by_position(a, b, tol["pos"])
        if b is None:
            print(f"FAIL: not every Gaussian of {a_path} has one of {b_path} within pos={tol['pos']:g}")
            return 1
    worst = {k: 0.0 for k in tol}
    sq, nsq = 0.0, 0
    rest = [k for k in a[0] if k.startswith("f_rest_")]
    rest_b = [k for k in b[0] if k.startswith("f_rest_")]
    for ga, gb in zip(a, b):
        d = {"pos": max(abs(ga[k] - gb[k]) for k in "xyz"),
             "scale": max(abs(ga["scale_%d" % k] - gb["scale_%d" % k]) for k in range(3)),
             "alpha": abs(sig(ga["opacity"]) - sig(gb["opacity"])),
             "rgb": max(abs(C0 * (ga["f_dc_%d" % k] - gb["f_dc_%d" % k])) for k in range(3))}
        qa, qb = quat(ga), quat(gb)
        s = 1 if sum(x * y for x, y in zip(qa, qb)) >= 0 else -1
        d["rot"] = max(abs(x - s * y) for x, y in zip(qa, qb))
        if tol.get("sh") is not None:
            if len(rest) != len(rest_b):
                print(f"FAIL: SH rest coefficients {len(rest)} vs {len(rest_b)}")
                return 1
            d["sh"] = max((abs(ga[k] - gb[k]) for k in rest), default=0.0)
        if tol.get("shrms") is not None:
            sq += sum((ga[k] - gb[k]) ** 2 for k in rest)
            nsq += len(rest)
        for k in tol:
            if k in d and tol[k] is not None:
                worst[k] = max(worst[k], d[k])
    rc = 0
    if "up" in tol:
        ya, yb = (sum(g["y"] for g in x) / len(x) for x in (a, b))
        worst["up"] = abs(ya - yb)
        if ya * yb <= 0 or abs(ya - yb) > tol["up"]:
            print(f"FAIL: mean y {ya:.4f} vs {yb:.4f}: the scene is turned over")
            rc = 1
    if tol.get("shrms") is not None:
        worst["shrms"] = math.sqrt(sq / nsq) if nsq else 0.0
    for k, v in tol.items():
        if v is not None and k != "up" and worst[k] > v:
            print(f"FAIL: {k} differs by {worst[k]:.3g} > {v:g}")
            rc = 1
    print(" ".join(f"{k}={worst[k]:.2g}" for k in tol if tol[k] is not None))
    return rc


def read_glb(path):
    import json
    with open(path, "rb") as f:
        data = f.read()
    magic, version, length = struct.unpack_from("<III", data, 0)
    assert magic == 0x46546C67 and version == 2 and length == len(data), f"{path}: not a GLB 2 file"
    jlen, jtype = struct.unpack_from("<II", data, 12)
    doc = json.loads(data[20:20 + jlen])
    blen, btype = struct.unpack_from("<II", data, 20 + jlen)
    assert jtype == 0x4E4F534A and btype == 0x004E4942, f"{path}: bad chunks"
    binary = data[28 + jlen:28 + jlen + blen]
    assert "KHR_gaussian_splatting" in doc["extensionsUsed"], f"{path}: extension not declared"
    prim = doc["meshes"][0]["primitives"][0]
    assert "KHR_gaussian_splatting" in prim["extensions"] and prim["mode"] == 0
    out = {}
    for name, a in prim["attributes"].items():
        acc = doc["accessors"][a]
        view = doc["bufferViews"][acc["bufferView"]]
        comps = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[acc["type"]]
        fmt = {5126: "f", 5121: "B"}[acc["componentType"]]
        n = acc["count"] * comps
        vals = struct.unpack_from("<%d%s" % (n, fmt), binary, view["byteOffset"] + acc.get("byteOffset", 0))
        out[name] = [vals[i:i + comps] for i in range(0, n, comps)]
    return out


def glb_cmp(a_path, b_path, tol):
    a, b = read_glb(a_path), read_glb(b_path)
    if set(a) != set(b):
        print(f"FAIL: attributes differ: {sorted(set(a) ^ set(b))}")
        return 1
    rc, worst = 0, {}
    for name in sorted(a):
        w = 0.0
        for x, y in zip(a[name], b[name]):
            if name.endswith("ROTATION"):  # compared as unit quaternions (a writer may store them unnormalized)
                x, y = ([c / (math.sqrt(sum(v * v for v in q)) or 1) for c in q] for q in (x, y))
            s = -1 if name.endswith("ROTATION") and sum(p * q for p, q in zip(x, y)) < 0 else 1
            w = max(w, max(abs(p - s * q) for p, q in zip(x, y)))
        worst[name.replace("KHR_gaussian_splatting:", "")] = w
        if len(a[name]) != len(b[name]) or w > (1.0 if name == "COLOR_0" else tol):
            print(f"FAIL: {name} differs by {w:.3g}")
            rc = 1
    print(f"{len(a)} attributes, largest difference {max(worst.values()):.2g}")
    return rc


if __name__ == "__main__":
    if sys.argv[1] == "glb":
        sys.exit(glb_cmp(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(cmp(sys.argv[2], sys.argv[3], sys.argv[4]))
