"""metal-emu worker: runs dispatches of compiled MSL modules in a process of its own.

fastgemm.emu starts this script (standard library only) with `python -I worker.py` and keeps
it for later calls. Requests and answers are pickled, length-prefixed, on the worker's stdin
and on a duplicate of its original stdout; fd 1 itself is pointed at stderr so that nothing a
shader prints can corrupt the protocol. Buffers travel through a shared file that both
processes map. Before every dispatch the module installs its fault handlers, which write a
one-line report into a second shared file and end this process: a fault, a division by
zero, an abort or an exceeded time limit costs the worker, never the caller.

Requests: {"op": "list" | "constants" | "bindings" | "run", "so": path, ...}; answers: {"rc", "text"}.

The caller's pid comes as the second argument. Should the caller die without closing the
pipe's far end in time (SIGKILL, a crash) while a dispatch runs, a watcher thread notices
that this process has a new parent, removes the caller's shared files (their folder) and
ends the worker, so that neither a spinning shader nor its arena outlives the caller.
"""
import ctypes
import mmap
import os
import pickle
import shutil
import struct
import sys
import threading
import time

REPORT_BYTES = 4096
TEXTURE_DESC_WORDS = 7  # fastgemm.emu.Texture.desc: the runtime reads this many numbers a texture


def _read_exact(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class Module:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.fgemu_c_list.restype = ctypes.c_size_t
        lib.fgemu_c_list.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.fgemu_c_constants.restype = ctypes.c_size_t
        lib.fgemu_c_constants.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.fgemu_c_bindings.restype = ctypes.c_size_t
        lib.fgemu_c_bindings.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.fgemu_c_install_fault_handlers.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.fgemu_c_run.restype = ctypes.c_int
        lib.fgemu_c_argbuf_size.restype = ctypes.c_size_t
        lib.fgemu_c_argbuf_size.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                            ctypes.c_size_t]
        lib.fgemu_c_argbuf_set.restype = ctypes.c_int
        lib.fgemu_c_argbuf_set.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                           ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        self.lib = lib

    def text(self, fn):
        n = fn(None, 0)
        buf = ctypes.create_string_buffer(n)
        fn(buf, n)
        return buf.value.decode()


class Worker:
    def __init__(self, report_path):
        fd = os.open(report_path, os.O_RDWR)
        self.report = mmap.mmap(fd, REPORT_BYTES)
        os.close(fd)
        self.report_addr = ctypes.addressof(ctypes.c_char.from_buffer(self.report))
        self.modules = {}
        self.arena = None
        self.arena_key = None

    def module(self, path):
        if path not in self.modules:
            self.modules[path] = Module(path)
        return self.modules[path]

    def map_arena(self, path, size):
        if self.arena_key != (path, size):
            if self.arena is not None:
                self.arena_ptr = None
                try:
                    self.arena.close()
                except BufferError:
                    pass
            fd = os.open(path, os.O_RDWR)
            self.arena = mmap.mmap(fd, size)
            os.close(fd)
            self.arena_key = (path, size)
            self.arena_base = ctypes.addressof(ctypes.c_char.from_buffer(self.arena))
        return self.arena_base

    def handle(self, req):
        mod = self.module(req["so"])
        op = req["op"]
        if op == "list":
            return {"rc": 0, "text": mod.text(mod.lib.fgemu_c_list)}
        if op == "constants":
            return {"rc": 0, "text": mod.text(mod.lib.fgemu_c_constants)}
        if op == "bindings":
            kernel = req["kernel"].encode()
            return {"rc": 0, "text": mod.text(lambda out, n: mod.lib.fgemu_c_bindings(kernel, out, n))}
        base = self.map_arena(req["arena"], req["arena_size"]) if req["arena_size"] else 0
        bufs = req["buffers"]
        nbuf = len(bufs)
        ptrs = (ctypes.c_void_p * max(nbuf, 1))(*[base + b[0] if b else None for b in bufs])
        sizes = (ctypes.c_size_t * max(nbuf, 1))(*[b[1] if b else 0 for b in bufs])
        kernel = req["kernel"].encode()
        failed, encoded = self.encode_argbufs(mod, kernel, req.get("argbufs", []), nbuf, base)
        if failed:
            return {"rc": 4, "text": failed}
        for i, (_, addr, size) in encoded.items():
            ptrs[i], sizes[i] = addr, size
        texs = req.get("textures", [])
        ntex = len(texs)
        tex_ptrs = (ctypes.c_void_p * max(ntex, 1))(*[base + t[0] if t else None for t in texs])
        tex_desc = (ctypes.c_uint * max(TEXTURE_DESC_WORDS * ntex, 1))(
            *[x for t in texs for x in (t[1] if t else [0] * TEXTURE_DESC_WORDS)])
        tg = req["threadgroup_memory"]
        tg_lens = (ctypes.c_size_t * max(len(tg), 1))(*tg)
        fcs = req["constants"]
        keep = [ctypes.create_string_buffer(raw, len(raw)) for (_, raw) in fcs]
        n_fc = len(fcs)
        err = ctypes.create_string_buffer(8192)
        self.report[:8] = b"\0" * 8
        mod.lib.fgemu_c_install_fault_handlers(self.report_addr, REPORT_BYTES)
        rc = mod.lib.fgemu_c_run(
            kernel, (ctypes.c_uint * 3)(*req["groups"]),
            (ctypes.c_uint * 3)(*req["tpg"]), ctypes.c_int(nbuf), ptrs, sizes,
            ctypes.c_int(len(tg)), tg_lens, ctypes.c_int(n_fc),
            (ctypes.c_int * max(n_fc, 1))(*[i for (i, _) in fcs]),
            (ctypes.c_void_p * max(n_fc, 1))(*[ctypes.cast(k, ctypes.c_void_p) for k in keep]),
            (ctypes.c_size_t * max(n_fc, 1))(*[len(raw) for (_, raw) in fcs]),
            ctypes.c_int(req["strict"]), ctypes.c_int(req["order"]),
            ctypes.c_ulonglong(req["seed"]), ctypes.c_int(req["os_threads"]),
            ctypes.c_size_t(req["stack_kb"]), ctypes.c_double(req["time_limit"]),
            ctypes.c_int(ntex), tex_ptrs, tex_desc, err,
            ctypes.c_size_t(len(err)))
        return {"rc": rc, "text": err.value.decode(errors="replace")}


    @staticmethod
    def encode_argbufs(mod, kernel, argbufs, nbuf, base):
        """Encodes each ArgumentBuffer into zeroed storage laid out like its struct; refuses
        one bound where the kernel takes none, and a plain buffer where it takes one (its
        pointers would be host bytes). Returns (error or None, {index: storage})."""
        name = ctypes.create_string_buffer(512)
        given = {i: members for (i, members) in argbufs}
        if given and kernel.decode() not in mod.text(mod.lib.fgemu_c_list).split("\n"):
            return None, {}  # the dispatch reports the unknown kernel
        encoded = {}
        mod.lib.fgemu_c_argbuf_begin()
        for i in range(max([nbuf] + [j + 1 for j in given])):
            size = mod.lib.fgemu_c_argbuf_size(kernel, i, name, len(name))
            struct_name = name.value.decode(errors="replace")
            if i not in given:
                if size:
                    return (f"buffer {i} is an argument buffer (struct {struct_name} with "
                            "[[id(n)]] members): pass fastgemm.emu.ArgumentBuffer({id: "
                            "array or value, ...}) there", {})
                continue
            if not size:
                return (f"buffer {i} is given an ArgumentBuffer, but the kernel takes no "
                        "argument buffer there", {})
            storage = ctypes.create_string_buffer(size + 64)  # zeroed
            addr = (ctypes.addressof(storage) + 63) // 64 * 64  # aligned like a Metal buffer
            err = ctypes.create_string_buffer(1024)
            for (k, lay, desc) in given[i]:
                ptr, n = (base + lay[0], lay[1]) if lay else (None, 0)
                tex = (ctypes.c_uint * TEXTURE_DESC_WORDS)(*desc) if desc else None
                if mod.lib.fgemu_c_argbuf_set(kernel, i, addr, k, ptr, n, tex, err, len(err)):
                    return (f"buffer {i} (struct {struct_name}) id {k}: "
                            f"{err.value.decode(errors='replace')}", {})
            encoded[i] = (storage, addr, size)
        return None, encoded


def watch_parent(parent_pid: int, folder: str) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    if os.path.basename(folder).startswith("fgemu-worker-"):
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)


def main():
    if len(sys.argv) > 2:
        threading.Thread(target=watch_parent, args=(int(sys.argv[2]), os.path.dirname(sys.argv[1])),
                         daemon=True).start()
    inp = sys.stdin.buffer
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # shader output goes to stderr, never into the protocol
    worker = Worker(sys.argv[1])
    while True:
        head = _read_exact(inp, 8)
        if head is None:
            return 0
        req = pickle.loads(_read_exact(inp, struct.unpack("<Q", head)[0]))
        try:
            ans = worker.handle(req)
        except Exception as e:  # a broken module file, a bad request: the caller's error
            ans = {"rc": 3, "text": f"{type(e).__name__}: {e}"}
        data = pickle.dumps(ans)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
