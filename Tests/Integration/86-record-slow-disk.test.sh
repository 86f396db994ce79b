#!/usr/bin/env bash
# A slow, stalling disk, as an SD card is: recordings go to an ext4 file system on a
# device-mapper delay target (every write 500 ms late) over a loop device, and
# `dmsetup suspend` holds all its writes for 0.5 to 2 s at random moments
# (Tests/Starvation/starve.py --condition disk). Every file is read by the independent
# readers and must hold what capctl reported; losses only where reported.
source "$(dirname "$0")/lib.sh"
need dmsetup losetup mkfs.ext4 python3

work=$(pwd)
truncate -s 256M "$work/disk.img"
loop=$(losetup -f --show "$work/disk.img") || fail "no loop device"
sectors=$(blockdev --getsz "$loop")
# Reads at once, writes 500 ms late.
dmsetup create capctl-slow --noudevsync --table "0 $sectors delay $loop 0 0 $loop 0 500" || fail "no dm-delay target"
# No udev runs in the virtual machine: the device's node is made here.
dmsetup mknodes capctl-slow >/dev/null 2>&1 || true
disk=/dev/mapper/capctl-slow
[[ -b $disk ]] || disk=/dev/$(dmsetup info -c --noheadings -o blkdevname capctl-slow | tr -d ' ')
[[ -b $disk ]] || fail "no block device for capctl-slow"
cleanup() {
  # Setting the ratio again puts the byte limit back to none.
  [[ -n ${dirty_ratio:-} ]] && echo "$dirty_ratio" >/proc/sys/vm/dirty_ratio
  umount "$work/slow" 2>/dev/null || true
  dmsetup resume capctl-slow 2>/dev/null || true
  dmsetup remove capctl-slow 2>/dev/null || true
  losetup -d "$loop" 2>/dev/null || true
}
trap cleanup EXIT
mkfs.ext4 -q "$disk" || fail "mkfs.ext4 failed"
mkdir -p "$work/slow"
mount "$disk" "$work/slow" || fail "cannot mount the slow disk"
# A small board's page cache: past 1 MiB of dirty data a writer waits for the disk, so a
# stalled disk stalls capctl's writing thread, not only the kernel's writeback.
dirty_ratio=$(cat /proc/sys/vm/dirty_ratio)
echo 1048576 >/proc/sys/vm/dirty_bytes

# The stall: every write held while the device is suspended (--nolockfs: a frozen file
# system would hold the writer in the kernel as a stalled card does, but also this script).
stall='dmsetup suspend --nolockfs capctl-slow && sleep "$1"; dmsetup resume capctl-slow'
run python3 "$REPO/Tests/Starvation/starve.py" --condition disk --dir "$work/slow" --stall "$stall" \
  --capctl "$CAPCTL" --keep "${RESULTS:-$work}/artifacts/86-record-slow-disk" --case mp4 --case segments
show_last
[[ $LAST_STATUS -eq 0 ]] || fail "recordings on a stalling disk disagree with their files"
grep -q '^0 passed' last.stdout && fail "no recording ran"
true
