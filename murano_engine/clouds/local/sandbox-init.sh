#!/bin/sh
# Runs as root in a server's new mount, UTS, IPC and PID namespaces (and its
# network namespace), called by the sandbox's first process (sandbox-enter.py):
# names the host, builds the sandbox's root from read-only binds of what the
# agent needs plus the server's own folder, with that process's init code as
# /init.py, and switches the namespace to it (the caller's root moves too).
#
#   sandbox-init.sh ROOT HOSTNAME FOLDER RO_PATHS
#
# RO_PATHS is a colon-separated list of host folders bound read-only at the
# same path (the Python installation, the agent's code).
set -eu
root=$1 name=$2 folder=$3 ro_paths=$4

hostname "$name"
mount -t tmpfs -o mode=0755,size=16m sandbox-root "$root"
# Few processes (each costs a fork and exec): folders made by a mkdir before /tmp is
# mounted and one after (colon-separated lists: paths may hold spaces), the
# top-level links copied by one cp, the /etc files by another.
links="" tops="" etc_dirs=""
dirs="$root/usr:$root/etc:$root/proc:$root/dev/shm:$root/tmp:$root/sandbox:$root/.host"
for top in bin lib lib64 sbin; do
    if [ -L "/$top" ]; then
        links="$links /$top"
    elif [ -d "/$top" ]; then
        tops="$tops $top" dirs="$dirs:$root/$top"
    fi
done
old_ifs=$IFS; IFS=:
mkdir -p $dirs
IFS=$old_ifs
[ -z "$links" ] || cp -P $links "$root/"
for top in $tops; do
    mount --rbind -o ro "/$top" "$root/$top"
done
mount --rbind -o ro /usr "$root/usr"
# Private /tmp first: a read-only path below /tmp (a checkout there) is bound over it.
mount -t tmpfs -o mode=1777,size=256m sandbox-tmp "$root/tmp"
IFS=:
ro_here="" dirs="$root/etc"
for path in $ro_paths; do
    [ -e "$path" ] && ro_here="$ro_here:$path" && dirs="$dirs:$root$path"
done
IFS=$old_ifs
for dir in ssl alternatives; do
    [ -d "/etc/$dir" ] && etc_dirs="$etc_dirs $dir" && dirs="$dirs:$root/etc/$dir"
done
IFS=:
mkdir -p $dirs
for path in ${ro_here#:}; do
    mount --rbind -o ro "$path" "$root$path"
done
IFS=$old_ifs
files=""
for file in passwd group nsswitch.conf ld.so.cache localtime; do
    [ -e "/etc/$file" ] && files="$files /etc/$file"
done
[ -z "$files" ] || cp -L $files "$root/etc/"
for dir in $etc_dirs; do
    mount --rbind -o ro "/etc/$dir" "$root/etc/$dir"
done
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" > "$root/etc/hosts"
echo "$name" > "$root/etc/hostname"
devices="null zero full random urandom tty"
for dev in $devices; do
    : > "$root/dev/$dev"
done
for dev in $devices; do
    mount --bind "/dev/$dev" "$root/dev/$dev"
done
mount -t tmpfs -o mode=1777,size=64m sandbox-shm "$root/dev/shm"
mount --bind "$folder" "$root/sandbox"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
cp "${0%/*}/sandbox-init.py" "$root/init.py"
chmod 0555 "$root"

cd "$root"
pivot_root . .host
umount -l /.host
rmdir /.host
