#!/bin/sh
# A slow disk for bench/state_sync_bench.py (docs/BENCHMARKS.md, "Disk-backed
# state"): an ext4 file system on a loop device, mounted at DIR, whose
# writes are throttled to IOPS per second for the processes of the blkio
# cgroup /sys/fs/cgroup/blkio/agentd-slow (cgroup v1; the journal thread is
# not throttled, so an fsync waits for its data block's write slot: tens of
# milliseconds at 20 IOPS, like a busy cloud disk). dm-delay would be the
# direct tool; this kernel has no device mapper. Root only.
#   bench/slow_disk.sh up DIR [IOPS]   prints the cgroup directory
#   bench/slow_disk.sh down DIR
set -eu
dir=$2
cg=/sys/fs/cgroup/blkio/agentd-slow
case $1 in
up)
  mkdir -p "$dir"
  truncate -s 256M "$dir.img"
  mkfs.ext4 -q -F "$dir.img"
  loop=$(losetup -f --show "$dir.img")
  mount "$loop" "$dir"
  mkdir -p "$cg"
  echo "$(lsblk -no MAJ:MIN "$loop" | tr -d ' ') ${3:-20}" > "$cg/blkio.throttle.write_iops_device"
  echo "$cg"
  ;;
down)
  loop=$(findmnt -no SOURCE "$dir")
  umount "$dir"
  losetup -d "$loop"
  rm -f "$dir.img"
  rmdir "$cg" 2>/dev/null || true
  ;;
esac
