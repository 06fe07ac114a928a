#!/bin/sh
# Runs as root inside a server's new mount, UTS, IPC and PID namespaces (and its
# network namespace): names the host, builds the sandbox's root from read-only
# binds of what the agent needs plus the server's own folder, switches to it,
# then runs COMMAND as UID (no capabilities) in a user namespace of its own,
# under sandbox-init.py (PID 1: it reaps the orphans a VM's init would).
#
#   sandbox-init.sh ROOT HOSTNAME FOLDER UID RO_PATHS PYTHON COMMAND...
#
# RO_PATHS is a colon-separated list of host folders bound read-only at the
# same path (the Python installation, the agent's code).
set -eu
root=$1 name=$2 folder=$3 uid=$4 ro_paths=$5 python=$6
shift 6

hostname "$name"
mount -t tmpfs -o mode=0755,size=16m sandbox-root "$root"
for top in bin lib lib64 sbin; do
    if [ -L "/$top" ]; then
        ln -s "$(readlink "/$top")" "$root/$top"
    elif [ -d "/$top" ]; then
        mkdir -p "$root/$top" && mount --rbind -o ro "/$top" "$root/$top"
    fi
done
mkdir -p "$root/usr" "$root/etc" "$root/proc" "$root/dev/shm" "$root/tmp" "$root/sandbox"
mount --rbind -o ro /usr "$root/usr"
# Private /tmp first: a read-only path below /tmp (a checkout there) is bound over it.
mount -t tmpfs -o mode=1777,size=256m sandbox-tmp "$root/tmp"
old_ifs=$IFS; IFS=:
for path in $ro_paths; do
    [ -e "$path" ] || continue
    mkdir -p "$root$path" && mount --rbind -o ro "$path" "$root$path"
done
IFS=$old_ifs
for file in passwd group nsswitch.conf ld.so.cache localtime; do
    [ -e "/etc/$file" ] && cp -L "/etc/$file" "$root/etc/$file"
done
for dir in ssl alternatives; do
    [ -d "/etc/$dir" ] && mkdir -p "$root/etc/$dir" && mount --rbind -o ro "/etc/$dir" "$root/etc/$dir"
done
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$name" > "$root/etc/hosts"
echo "$name" > "$root/etc/hostname"
for dev in null zero full random urandom tty; do
    touch "$root/dev/$dev" && mount --bind "/dev/$dev" "$root/dev/$dev"
done
mount -t tmpfs -o mode=1777,size=64m sandbox-shm "$root/dev/shm"
mount --bind "$folder" "$root/sandbox"
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
cp "$(dirname "$0")/sandbox-init.py" "$root/init.py"
chmod 0555 "$root"

cd "$root"
mkdir .host
pivot_root . .host
umount -l /.host
rmdir /.host
cd /sandbox
export HOME=/sandbox PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all \
    --bounding-set=-all unshare --user --map-root-user -- "$python" /init.py "$@"
