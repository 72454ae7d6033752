"""One step of an evaluation harness: grade a task inside a guest, surviving
harness restarts.

    python3 eval_harness.py URL TOKEN TASK_DIR OUT_DIR [GUEST_DIR]

Uploads TASK_DIR into the guest (GUEST_DIR/<exec id>, default under
/workspace), runs its ``grade.sh`` there as a detached exec with a 15-minute
timeout, streams its output into OUT_DIR/stdout.log and OUT_DIR/stderr.log,
downloads the task's ``results/`` directory into OUT_DIR/results, writes
OUT_DIR/verdict.json and acks the exec.

The only state kept between runs is OUT_DIR/state.json: the exec id (minted
and saved before anything starts) and the two stream cursors (saved after
every event). Kill this program at any moment and run it again: it uploads
the same tree, starts the same id (the daemon answers the exec it already
has instead of starting a second one), and resumes the stream from the
saved cursors, so each log holds every byte exactly once.
"""

import json
import os
import sys

from agentd_client import (AgentdError, Client, Cursors, ExitEvent, GapEvent, OutputEvent,
                           mint_exec_id)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_json(path, doc):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)  # atomic: a crash never leaves half a file


def open_log(path, cursor):
    """The log, cut back to the saved cursor (bytes past it were never confirmed)."""
    f = open(path, "ab")
    f.truncate(cursor)
    return f


def grade(url, token, task_dir, out_dir, guest_dir="/workspace"):
    os.makedirs(out_dir, exist_ok=True)
    verdict_path = os.path.join(out_dir, "verdict.json")
    if os.path.exists(verdict_path):
        return load_json(verdict_path)
    state_path = os.path.join(out_dir, "state.json")
    state = load_json(state_path) or {"id": mint_exec_id("grade"), "stdout": 0, "stderr": 0}
    save_json(state_path, state)  # the id is persisted before the exec can exist

    with Client(url, token=token) as guest:
        remote = "%s/%s" % (guest_dir, state["id"])
        guest.upload_dir(task_dir, remote, parents=True)
        guest.start_exec(state["id"], ["sh", "grade.sh"], cwd=remote, timeout_sec=900)
        logs = {name: open_log(os.path.join(out_dir, name + ".log"), state[name])
                for name in ("stdout", "stderr")}
        try:
            for event in guest.stream(state["id"], Cursors(state["stdout"], state["stderr"])):
                if isinstance(event, OutputEvent):
                    logs[event.kind].write(event.data)
                    logs[event.kind].flush()
                elif isinstance(event, ExitEvent):
                    final = event.exec
                elif isinstance(event, GapEvent):  # output the guest no longer kept
                    state.setdefault("gaps", []).append([event.stream, event.start, event.end])
                state["stdout"], state["stderr"] = event.cursors
                save_json(state_path, state)
        finally:
            for f in logs.values():
                f.close()
        try:
            guest.download_dir(remote + "/results", os.path.join(out_dir, "results"))
        except AgentdError as e:  # no results directory: the verdict says so
            state["results_error"] = e.code
        verdict = {"id": state["id"], "exit_code": final.exit_code, "passed": final.exit_code == 0,
                   "timed_out": final.timed_out, "duration_ms": final.duration_ms,
                   "gaps": state.get("gaps", []), "results_error": state.get("results_error")}
        save_json(verdict_path, verdict)
        guest.ack_exec(state["id"])
        guest.remove(remote, recursive=True)
        return verdict


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    print(json.dumps(grade(*sys.argv[1:])))
