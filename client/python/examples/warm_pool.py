"""A warm pool: a few guests serve many tenants in turn, reset between them.

    python3 warm_pool.py [--tenants N] [--json] GUEST [GUEST ...]

Each GUEST is ``URL,RESET_PATH[,TOKEN]``: a daemon started with
``--reset-path RESET_PATH`` and, when TOKEN is given, already bootstrapped
with it (else the pool bootstraps it at its first checkout).

The lifecycle (docs/EMBEDDING.md, "Warm pools"):

1. checkout: an idle guest is taken from the pool; a fresh guest is
   bootstrapped with the tenant's token, a reused one already holds it
   (installed by the last reset). The tenant first proves it sees nothing of
   the previous tenant: no exec, no file in the reset path, no match of the
   previous tenant's canary by content search or by a process's command line.
2. run: the tenant writes an unpredictable canary into the reset path,
   leaves a process behind that left its group (setsid), and runs its work.
3. reset: ``POST /v1/reset`` with the token of the slot's next tenant, in
   one step, so nobody else can claim the guest in between.
4. return or drop: a clean guest goes back to the pool; a quarantined one
   (``clean: false``; health answers 503 "quarantined") is dropped with
   what remained, never handed to another tenant.

Prints one line per checkout (checkout_ms, execution_ms, teardown_ms,
clean) and a summary with the clean teardown rate. Exits 1 when a tenant
saw a trace of an earlier one, 2 when every guest was dropped before the
tenants were served.
"""

import argparse
import collections
import json
import secrets
import sys
import time

from agentd_client import AgentdError, Client

# The tenant's work: a canary file in the reset path (name and contents), a
# setsid'd process whose command line carries the canary and that ignores
# SIGTERM, and a line of output. The canary comes split in two variables so
# that no command line of the pool itself contains it.
TENANT_WORK = r"""set -e
c="$CA$CB"
mkdir -p "$P/work"
printf '%s\n' "$c" > "$P/work/$c.txt"
setsid sh -c 'trap "" TERM; while :; do sleep 1000; done' "$c" </dev/null >/dev/null 2>&1 &
echo "tenant $c at work"
"""

# What the next tenant runs first: every file left in the reset path, and
# every process whose command line holds the previous canary.
LOOK_FOR_TRACES = r"""
find "$P" -mindepth 1 | sed 's/^/file: /'
if [ -n "$CA$CB" ]; then
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -qF "$CA$CB"; then echo "process: $p"; fi
  done
fi
true
"""


class Guest:
    def __init__(self, spec):
        parts = spec.split(",")
        if len(parts) not in (2, 3):
            raise SystemExit("a GUEST is URL,RESET_PATH[,TOKEN]: %r" % spec)
        self.url, self.reset_path = parts[0], parts[1]
        self.token = parts[2] if len(parts) == 3 else None
        self.fresh = self.token is None  # bootstrap at the first checkout
        self.last_canary = ""
        self.client = Client(self.url)


def split(canary):
    half = len(canary) // 2
    return {"CA": canary[:half], "CB": canary[half:]}


def checkout(guest, token):
    """The tenant's client for `guest`, holding the tenant's token."""
    if guest.fresh:
        guest.client.bootstrap(token)
        guest.fresh = False
    else:
        guest.client.set_token(token)
    return guest.client


def traces(client, guest):
    """Whatever of an earlier tenant this tenant can see; empty is the pass."""
    found = ["exec: %s" % e.id for e in client.list_execs()]
    env = dict(split(guest.last_canary), P=guest.reset_path)
    look = client.run(["sh", "-c", LOOK_FOR_TRACES], env=env)
    found += look.stdout.decode().splitlines()
    if guest.last_canary:
        hits = client.search(guest.reset_path, guest.last_canary, fixed=True, hidden=True,
                             gitignore=False)
        found += ["content: %s" % m.path for m in hits.matches]
    return found


def serve(guests, tenants, out):
    idle = collections.deque(guests)
    # Each slot's next tenant's token, installed by the reset before it.
    tokens = {id(g): g.token or secrets.token_hex(16) for g in guests}
    rows, dropped, breaches = [], [], 0
    for n in range(tenants):
        if not idle:
            break
        guest = idle.popleft()
        t0 = time.monotonic()
        client = checkout(guest, tokens[id(guest)])
        seen = traces(client, guest)
        t1 = time.monotonic()
        canary = "cn" + secrets.token_hex(16)
        work = client.run(["sh", "-c", TENANT_WORK], env=dict(split(canary), P=guest.reset_path))
        t2 = time.monotonic()
        next_token = secrets.token_hex(16)
        report = client.reset(next_token=next_token)
        t3 = time.monotonic()
        row = {"tenant": n, "guest": guest.url, "checkout_ms": round((t1 - t0) * 1000, 2),
               "execution_ms": round((t2 - t1) * 1000, 2),
               "teardown_ms": round((t3 - t2) * 1000, 2), "exit_code": work.exit_code,
               "clean": report.clean, "generation": report.generation, "traces": seen}
        rows.append(row)
        out(row)
        breaches += bool(seen)
        if report.clean:
            guest.last_canary = canary
            tokens[id(guest)] = next_token
            idle.append(guest)
        else:
            # Quarantined: capacity lost, never confidentiality.
            dropped.append({"guest": guest.url, "remaining": report.remaining})
    return rows, dropped, breaches


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("guests", nargs="+", metavar="GUEST")
    args = ap.parse_args(argv)
    guests = [Guest(spec) for spec in args.guests]

    def out(row):
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print("tenant %(tenant)3d on %(guest)s: checkout %(checkout_ms)7.2f ms, "
                  "execution %(execution_ms)7.2f ms, teardown %(teardown_ms)7.2f ms, "
                  "clean %(clean)s" % row, flush=True)
            for t in row["traces"]:
                print("  TRACE of an earlier tenant: " + t, flush=True)

    try:
        rows, dropped, breaches = serve(guests, args.tenants, out)
    except AgentdError as e:
        print("warm_pool: %s" % e, file=sys.stderr)
        return 2
    finally:
        for g in guests:
            g.client.close()
    clean = sum(1 for r in rows if r["clean"])
    summary = {"summary": True, "tenants": len(rows), "breaches": breaches,
               "clean_teardown_rate": round(clean / len(rows), 4) if rows else 0.0,
               "dropped": dropped,
               "median_ms": {k: median([r[k] for r in rows])
                             for k in ("checkout_ms", "execution_ms", "teardown_ms")}}
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        print("%d tenants, clean teardown rate %.4f, %d guest(s) dropped, %d breach(es); "
              "median checkout %.2f ms, execution %.2f ms, teardown %.2f ms" % (
                  summary["tenants"], summary["clean_teardown_rate"], len(dropped), breaches,
                  *summary["median_ms"].values()))
        for d in dropped:
            print("dropped %s (quarantined): %s" % (d["guest"], d["remaining"]))
    if breaches:
        return 1
    return 2 if len(rows) < args.tenants else 0


if __name__ == "__main__":
    sys.exit(main())
