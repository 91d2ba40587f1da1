# tools/gdb/jiffy-gdb.py - the gdb extension for Jiffy: uthreads, workers and uthread backtraces,
# in a live process or a core file.
#
# Owns: the gdb commands `jiffy threads` (alias `info uthreads`), `jiffy bt ID|NAME [bt options]`
# and `jiffy workers`, and the unwinder that lets gdb walk the stack of a uthread that is switched
# out. docs/debugging.md says how to load it and what the output means.
#
# Where things are (src/runtime/runtime.h, the model comment at its top):
#   - jf_rt (struct runtime *) is the runtime; NULL when none runs.
#   - Every mapped uthread stack is on the list rt->reg_head, linked by reg_next
#     (src/runtime/stack.c), including cached stacks waiting for reuse (vstate UV_FREE, or in a
#     worker's stack_cache / the shared pool): those are not uthreads and are skipped.
#   - A uthread's visible state: vstate (enum uthread_vstate), off_reason (enum
#     jf_enqueue_reason, why it is runnable), wait_on/wait_obj (what it is blocked on), state_ns
#     (jf_now_ns() when vstate last changed).
#   - A running uthread is some worker's w->cur; its registers are those of the worker's kernel
#     thread (struct worker.pre.tid is its LWP), so its backtrace is that thread's.
#   - A uthread that is not running was switched out by jf_ctx_switch (arch/x86_64/switch.S): its
#     callee-saved registers are on its own stack at t->ctx.sp, in the layout jf_ctx_init()
#     (context.h) prepares for a new one:
#         sp+0 mxcsr | fpucw << 32, sp+8 r15, sp+16 r14, sp+24 r13, sp+32 r12, sp+40 rbx,
#         sp+48 rbp, sp+56 return address; rsp = sp+64 once the switch has returned.
#     `jiffy bt` arms an unwinder that gives the innermost frame of the selected kernel thread the
#     uthread's registers as its caller's: gdb then walks the uthread's stack by itself (through
#     the signal frame of a preempted uthread too). It only supplies values, never writes
#     registers, so it works on a core file as well. The borrowed innermost frame(s) are dropped
#     from the output and the rest renumbered from #0.
#
# Types are looked up by name in the library's debug information (build with -g: RelWithDebInfo
# or Debug); nothing here depends on struct offsets.

import re
import struct
import time

import gdb
import gdb.unwinder

# enum uthread_vstate (src/runtime/runtime.h), used when the debug info lacks the enum type (it does
# when no variable has that type; the field is a uint8_t). Keep in sync.
_VSTATE_FALLBACK = {0: "runnable", 1: "running", 2: "blocked", 3: "exited", 4: "free"}
_UV_RUNNABLE, _UV_RUNNING, _UV_BLOCKED, _UV_EXITED, _UV_FREE = 0, 1, 2, 3, 4
# enum jf_enqueue_reason (include/jiffy/policy.h) and enum worker_park_state (runtime.h), the
# same way.
_REASON_FALLBACK = {0: "new", 1: "yielded", 2: "woken", 3: "preempted"}
_PARK_FALLBACK = {0: "running", 1: "parked", 2: "parked_poll"}

_MAX_UTHREADS = 10_000_000  # a bound on walking the registry, against a corrupt list


class _Err(gdb.GdbError):
    pass


def _enum_names(type_name, prefix, fallback):
    """Value -> lower-case name without @prefix, from the debug info, else @fallback."""
    try:
        t = gdb.lookup_type(type_name)
    except gdb.error:
        return dict(fallback)
    names = {}
    for f in t.fields():
        n = f.name
        if n.startswith(prefix):
            n = n[len(prefix):]
        names[int(f.enumval)] = n.lower()
    return names


def _runtime():
    try:
        rt = gdb.parse_and_eval("jf_rt")
    except gdb.error as e:
        raise _Err("jiffy: no Jiffy runtime in this program (%s); is libjiffy loaded, and built "
                   "with debug info?" % e)
    try:
        if int(rt) == 0:
            raise _Err("jiffy: no runtime (jf_rt is NULL)")
    except gdb.MemoryError as e:
        raise _Err("jiffy: cannot read jf_rt: %s" % e)
    return rt.dereference()


def _cstr(v, limit=256):
    """A NUL-terminated string at char * @v, or None for NULL."""
    if int(v) == 0:
        return None
    try:
        return v.string(errors="replace", length=-1)[:limit]
    except gdb.error:
        return "<unreadable %#x>" % int(v)


def _name(t):
    raw = t["name"]
    n = raw.type.range()[1] + 1
    data = bytes(gdb.selected_inferior().read_memory(raw.address, n))
    return data.split(b"\0", 1)[0].decode("utf-8", "replace")


def _cached_stacks(rt):
    """Addresses of the free stacks in the workers' caches and the shared pool."""
    free = set()
    for i in range(int(rt["nworkers"])):
        w = rt["workers"][i]
        cache = w["stack_cache"]
        if int(cache) == 0:
            continue
        for k in range(int(w["nr_cached"])):
            free.add(int(cache[k]))
    t = rt["pool_head"]
    n = 0
    while int(t) != 0 and n < _MAX_UTHREADS:
        free.add(int(t))
        t = t["wq_next"]
        n += 1
    return free


class _UThread:
    """What `jiffy threads` shows of one struct jf_thread."""

    def __init__(self, t, running_on):
        self.ptr = t
        self.addr = int(t)
        v = t.dereference()
        self.v = v
        self.id = int(v["task"]["id"])
        self.name = _name(v)
        self.vstate = int(v["vstate"])
        self.worker = running_on  # worker index when some worker's cur is this uthread
        if self.worker is not None:
            self.vstate = _UV_RUNNING
        elif self.vstate == _UV_RUNNING and int(v["worker"]) != 0:
            self.worker = int(v["worker"]["id"])
        self.last_worker = int(v["task"]["last_worker"])
        self.klass = int(v["task"]["attr"]["klass"])
        self.off_reason = int(v["off_reason"])
        self.wait_on = _cstr(v["wait_on"], 32)
        self.wait_obj = int(v["wait_obj"])
        self.state_ns = int(v["state_ns"])
        self.sp = int(v["ctx"]["sp"])


def _workers_cur(rt):
    """uthread address -> index of the worker running it."""
    cur = {}
    for i in range(int(rt["nworkers"])):
        c = int(rt["workers"][i]["cur"])
        if c:
            cur[c] = i
    return cur


def _uthreads(rt):
    """Every uthread on the registry (cached stacks left out), in registry order."""
    free = _cached_stacks(rt)
    running = _workers_cur(rt)
    out = []
    t = rt["reg_head"]
    seen = set()
    while int(t) != 0:
        a = int(t)
        if a in seen or len(seen) >= _MAX_UTHREADS:
            raise _Err("jiffy: the stack registry loops at %#x (corrupt memory?)" % a)
        seen.add(a)
        try:
            u = _UThread(t, running.get(a))
        except gdb.MemoryError as e:
            raise _Err("jiffy: cannot read the uthread at %#x: %s" % (a, e))
        if a not in free and u.vstate != _UV_FREE:
            out.append(u)
        t = t["reg_next"]
    return out


def _is_core():
    inf = gdb.selected_inferior()
    conn = getattr(inf, "connection", None)
    if conn is not None:
        return conn.type == "core"
    return "core file" in gdb.execute("info target", to_string=True)


def _live_now():
    """CLOCK_MONOTONIC now, for a live process on this machine; None otherwise (a core file, a
    remote target). jf_now_ns() is on the CLOCK_MONOTONIC time base, and gdb's own clock is the
    inferior's when the target is native. It is not obtained by calling jf_now_ns() in the
    inferior: an inferior call resumes the inferior, and a preemption signal pending on the
    worker (the timer mechanism's keep coming while gdb has it stopped) would be handled inside
    the call and could switch uthreads under it."""
    inf = gdb.selected_inferior()
    if inf.pid == 0 or gdb.selected_thread() is None:
        return None
    conn = getattr(inf, "connection", None)
    if conn is not None:
        if conn.type != "native":
            return None
    elif _is_core():
        return None
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _fmt_age(d):
    d = max(d, 0)  # the TSC-based jf_now_ns() may be a little ahead of CLOCK_MONOTONIC
    if d < 10_000:
        return "%dns" % d
    if d < 10_000_000:
        return "%.1fus" % (d / 1e3)
    if d < 10_000_000_000:
        return "%.1fms" % (d / 1e6)
    return "%.1fs" % (d / 1e9)


def _lwp_of_worker(rt, wid):
    return int(rt["workers"][wid]["pre"]["tid"])


def _gdb_thread_by_lwp(lwp):
    for th in gdb.selected_inferior().threads():
        if th.ptid[1] == lwp:
            return th
    return None


def _find(rt, key):
    us = _uthreads(rt)
    try:
        want = int(key, 0)
    except ValueError:
        want = None
    if want is not None:
        for u in us:
            if u.id == want:
                return u
        raise _Err("jiffy: no uthread with id %s (`jiffy threads` lists them)" % key)
    hits = [u for u in us if u.name == key]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise _Err("jiffy: no uthread with id or name '%s' (`jiffy threads` lists them)" % key)
    raise _Err("jiffy: %d uthreads are named '%s'; give an id: %s" %
               (len(hits), key, ", ".join(str(u.id) for u in hits)))


# --- jiffy threads --------------------------------------------------------------------------------

def _threads(arg, from_tty):
    rt = _runtime()
    vstates = _enum_names("enum uthread_vstate", "UV_", _VSTATE_FALLBACK)
    reasons = _enum_names("enum jf_enqueue_reason", "JF_ENQ_", _REASON_FALLBACK)
    us = _uthreads(rt)
    now = _live_now()
    note = ""
    if now is None:
        stamps = [u.state_ns for u in us if u.state_ns]
        now = max(stamps) if stamps else 0
        note = " (no live process: ages relative to the last state change)"
    try:
        if not int(rt["switch_clock"]):
            note += " (ages not tracked: the switch reads no clock; JIFFY_HIST=1 tracks them)"
    except gdb.error:
        pass  # a runtime from before switch_clock: it always stamped
    policy = rt["cfg"]["policy"].string(length=-1).split("\0", 1)[0]
    try:
        mech = _cstr(rt["mech"]["name"]) if int(rt["mech"]) else "?"
    except gdb.error:
        mech = "?"
    print("jiffy: %d uthreads, %d workers, policy %s, preempt %s%s" %
          (len(us), int(rt["nworkers"]), policy, mech, note))
    print("%8s %-23s %-9s %6s %5s %9s  %s" % ("ID", "NAME", "STATE", "WORKER", "CLASS", "FOR",
                                              "WHERE"))
    by_addr = {u.addr: u for u in us}
    for u in us:
        state = vstates.get(u.vstate, "?%d" % u.vstate)
        if u.vstate == _UV_RUNNING and u.worker is not None:
            wcol = str(u.worker)
            where = "on worker %d (LWP %d)" % (u.worker, _lwp_of_worker(rt, u.worker))
        else:
            wcol = str(u.last_worker) if u.last_worker >= 0 else "-"
            if u.vstate == _UV_BLOCKED:
                where = u.wait_on or "blocked"
                if u.wait_obj:
                    where += " %#x" % u.wait_obj
                    other = by_addr.get(u.wait_obj)
                    sym = None if other else _symbol_at(u.wait_obj)
                    if other:  # jf_join: the uthread it waits for
                        where += " (uthread %d '%s')" % (other.id, other.name or "-")
                    elif sym:  # a static jf_mutex_t, jf_cond_t, ...
                        where += " <%s>" % sym
            elif u.vstate == _UV_RUNNABLE:
                where = "queued: " + reasons.get(u.off_reason, "?%d" % u.off_reason)
            else:
                where = ""
        age = _fmt_age(now - u.state_ns) if u.state_ns else "-"
        print("%8d %-23s %-9s %6s %5d %9s  %s" % (u.id, u.name or "-", state, wcol, u.klass,
                                                  age, where))


def _symbol_at(addr):
    """`symbol` for a static object (a global jf_mutex_t), or None."""
    try:
        s = gdb.execute("info symbol %#x" % addr, to_string=True).strip()
    except gdb.error:
        return None
    if s.startswith("No symbol"):
        return None
    return s.split(" in section ", 1)[0]


# --- jiffy bt -------------------------------------------------------------------------------------

class _FrameId:
    """What create_unwind_info() wants: gdb.Value attributes sp and pc."""

    def __init__(self, sp, pc):
        u64 = gdb.lookup_type("unsigned long")
        self.sp = gdb.Value(sp).cast(u64)
        self.pc = gdb.Value(pc).cast(u64)


class _SwitchedOut(gdb.unwinder.Unwinder):
    """While armed: the innermost normal frame of the selected thread (recognised by its sp and pc)
    unwinds to the registers a switched-out uthread saved, instead of to its real caller."""

    def __init__(self):
        super().__init__("jiffy-uthread")
        self.armed = None  # (sp0, pc0, uthread sp, {register: value})
        self.level = None  # level of the frame it replaced, once it did

    def __call__(self, pending_frame):
        if self.armed is None:
            return None
        sp0, pc0, usp, regs = self.armed
        if (int(pending_frame.read_register("rsp")) != sp0 or
                int(pending_frame.read_register("rip")) != pc0):
            return None
        info = pending_frame.create_unwind_info(_FrameId(usp, pc0))
        for reg, val in regs.items():
            info.add_saved_register(reg, val)
        self.level = pending_frame.level()
        return info


_unwinder = _SwitchedOut()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)


def _saved_registers(sp):
    """The callee-saved registers a switched-out context left at @sp (see the header)."""
    try:
        raw = bytes(gdb.selected_inferior().read_memory(sp, 64))
    except gdb.MemoryError as e:
        raise _Err("jiffy: cannot read the saved context at %#x: %s" % (sp, e))
    _, r15, r14, r13, r12, rbx, rbp, ret = struct.unpack("<8Q", raw)
    u64 = gdb.lookup_type("unsigned long")
    code = gdb.lookup_type("void").pointer()
    vals = {"r15": r15, "r14": r14, "r13": r13, "r12": r12, "rbx": rbx, "rbp": rbp,
            "rsp": sp + 64}
    regs = {k: gdb.Value(v).cast(u64) for k, v in vals.items()}
    regs["rip"] = gdb.Value(ret).cast(u64).cast(code)
    return regs


_FRAME_RE = re.compile(r"^#(\d+)(\s+)")


def _drop_frames(text, upto):
    """Frames #0..#@upto of a `bt` output removed (with their continuation lines), the rest
    renumbered from #0."""
    out, keep = [], True
    for line in text.splitlines():
        m = _FRAME_RE.match(line)
        if m:
            n = int(m.group(1))
            keep = n > upto
            if keep:
                num = "#%d" % (n - upto - 1)
                line = num + " " * max(1, len(m.group(0)) - len(num)) + line[m.end():]
        if keep:
            out.append(line)
    return "\n".join(out)


class _KeepSelection:
    """Restores the selected thread and frame level that the user had."""

    def __enter__(self):
        self.thread = gdb.selected_thread()
        try:
            self.level = gdb.selected_frame().level()
        except gdb.error:
            self.level = None
        return self

    def __exit__(self, *exc):
        try:
            if self.thread is not None and self.thread.is_valid():
                self.thread.switch()
                if self.level:
                    gdb.execute("frame %d" % self.level, to_string=True)
        except gdb.error:
            pass
        return False


def _bt_switched_out(u, bt_args):
    th = gdb.selected_thread()
    if th is None:
        raise _Err("jiffy: no thread to borrow for the unwinder (no process or core file?)")
    if u.sp == 0:
        raise _Err("jiffy: uthread %d has no saved context" % u.id)
    regs = _saved_registers(u.sp)
    frame0 = gdb.newest_frame()
    sp0 = int(frame0.read_register("rsp"))
    pc0 = int(frame0.read_register("rip"))
    with _KeepSelection():
        _unwinder.armed = (sp0, pc0, u.sp, regs)
        _unwinder.level = None
        try:
            gdb.invalidate_cached_frames()
            text = gdb.execute("backtrace %s" % bt_args, to_string=True)
        finally:
            _unwinder.armed = None
            gdb.invalidate_cached_frames()
    if _unwinder.level is None:
        raise _Err("jiffy: the unwinder was not reached (frame 0 of thread %d unwound "
                   "differently); cannot show uthread %d" % (th.num, u.id))
    return _drop_frames(text, _unwinder.level)


def _bt(arg, from_tty):
    argv = gdb.string_to_argv(arg)
    if not argv:
        raise _Err("usage: jiffy bt ID|NAME [backtrace options, e.g. full or -frame-arguments all]")
    rt = _runtime()
    u = _find(rt, argv[0])
    bt_args = " ".join(argv[1:])
    vstates = _enum_names("enum uthread_vstate", "UV_", _VSTATE_FALLBACK)
    state = vstates.get(u.vstate, "?%d" % u.vstate)
    head = "uthread %d '%s' (%s)" % (u.id, u.name or "-", state)
    if u.vstate == _UV_RUNNING and u.worker is not None:
        lwp = _lwp_of_worker(rt, u.worker)
        th = _gdb_thread_by_lwp(lwp)
        if th is None:
            raise _Err("jiffy: %s runs on worker %d, LWP %d, which gdb does not list" %
                       (head, u.worker, lwp))
        print("%s: running on worker %d, the stack of gdb thread %d (LWP %d):" %
              (head, u.worker, th.num, lwp))
        with _KeepSelection():
            th.switch()
            gdb.execute("backtrace %s" % bt_args)
        return
    regs = _saved_registers(u.sp)
    if _symbol_at(int(regs["rip"])) == "jf_ctx_start":
        # A context jf_ctx_init() made and nobody switched to yet: there is no frame to unwind
        # (its "return address" is the first instruction of jf_ctx_start).
        fn = int(u.v["fn"])
        print("%s: has not run yet; it will start in %s (arg %#x)" %
              (head, _symbol_at(fn) or "%#x" % fn, int(u.v["arg"])))
        return
    if int(u.v["on_cpu"]):
        print("jiffy: warning: uthread %d is still on a CPU (its worker is switching it out "
              "right now): the registers below may be from its previous switch" % u.id)
    print("%s: switched out, registers saved at %#x:" % (head, u.sp))
    print(_bt_switched_out(u, bt_args))


# --- jiffy workers --------------------------------------------------------------------------------

def _workers(arg, from_tty):
    rt = _runtime()
    parks = _enum_names("enum worker_park_state", "WK_", _PARK_FALLBACK)
    print("%6s %8s %10s  %-13s %s" % ("WORKER", "LWP", "GDB-THREAD", "STATE", "RUNNING"))
    for i in range(int(rt["nworkers"])):
        w = rt["workers"][i]
        lwp = int(w["pre"]["tid"])
        th = _gdb_thread_by_lwp(lwp) if lwp else None
        cur = w["cur"]
        if int(cur):
            state = "running"
            running = "%d '%s'" % (int(cur["task"]["id"]), _name(cur.dereference()))
        else:
            park = int(w["idle"]["park_state"])
            state = parks.get(park, "?%d" % park)
            if park == 0:
                state = "spinning" if bool(w["idle"]["spinning"]) else "scheduling"
            running = "-"
        print("%6d %8d %10s  %-13s %s" % (int(w["id"]), lwp, str(th.num) if th else "-",
                                          state, running))


# --- commands -------------------------------------------------------------------------------------

class _Cmd(gdb.Command):
    def __init__(self, name, fn, doc, cmd_class=gdb.COMMAND_STACK, prefix=False):
        self.__doc__ = doc
        super().__init__(name, cmd_class, gdb.COMPLETE_NONE, prefix)
        self.fn = fn

    def invoke(self, arg, from_tty):
        if self.fn is None:
            gdb.execute("help jiffy")
            return
        try:
            self.fn(arg, from_tty)
        except gdb.GdbError:
            raise
        except gdb.MemoryError as e:
            raise gdb.GdbError("jiffy: cannot read the inferior's memory: %s" % e)


_Cmd("jiffy", None, "Jiffy uthreads and workers (tools/gdb/jiffy-gdb.py, docs/debugging.md).",
     prefix=True)
_Cmd("jiffy threads", _threads,
     "List every uthread, with its state and where it waits.\n"
     "Columns: id, name, state, worker (running on, else last ran on), policy class, how long\n"
     "it has been in that state, where it is blocked or why it is runnable.",
     gdb.COMMAND_STATUS)
_Cmd("info uthreads", _threads, "List every Jiffy uthread (the same as `jiffy threads`).",
     gdb.COMMAND_STATUS)
_Cmd("jiffy bt", _bt,
     "Backtrace of one uthread: jiffy bt ID|NAME [backtrace options].\n"
     "A running uthread's backtrace is its worker's kernel thread's; a switched-out one's is\n"
     "unwound from the registers it saved on its stack (also in a core file).")
_Cmd("jiffy workers", _workers,
     "List the workers: id, LWP, gdb thread, state (running, spinning, parked), what runs.",
     gdb.COMMAND_STATUS)
