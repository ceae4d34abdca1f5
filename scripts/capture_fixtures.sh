#!/usr/bin/env bash
# Capture the parser test fixtures from REAL runs of ping (iputils, busybox), iperf3 and
# iperf 2.x.
#
# Builds three network namespaces joined by veth pairs:
#
#     cli (10.77.1.1) --- rtr (10.77.1.254 | 10.77.2.254) --- srv (10.77.2.1)
#
# The router shapes both directions with HTB at $RATE (leaf pfifo of $QUEUE packets), so a
# UDP sender above the rate loses datagrams in the router queue (a sender's own qdisc
# would only slow the sender down). The kernel here has no netem: there is no added delay.
#
# Each capture writes tests/fixtures/<tool>/<name>.<txt|json> and <name>.meta (tool,
# version, exact command, how it was made). A few breakage cases that iperf3 3.12 does not
# produce by itself are DERIVED from a real capture by a mechanical transformation that
# the .meta names. Traffic stays inside the namespaces; everything is removed on exit.
#
#   bash scripts/capture_fixtures.sh            # all tools
#   bash scripts/capture_fixtures.sh ping       # only one of: ping iperf3 iperf3-text iperf3-bidir iperf3-forms iperf2 iperf2-rate iperf2-forms iperf2-dual iperf3-streams iperf3-killed-in-omit ss
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${FIXTURES_DIR:-$here/tests/fixtures}   # FIXTURES_DIR: write elsewhere (e.g. to compare)
RATE=${RATE:-20mbit}
QUEUE=${QUEUE:-50}
P=ltfx                       # prefix of every namespace and interface made here
CLI=$P-cli RTR=$P-rtr SRV=$P-srv
SRV_IP=10.77.2.1 RTR_SRV_IP=10.77.2.254 NOHOST_IP=10.77.2.99
LAN_NS="$P-lan $P-d0 $P-d1 $P-d2"   # the broadcast LAN of the ping part
only=${1:-all}

if [ "$(id -u)" != 0 ]; then echo "capture_fixtures: run as root" >&2; exit 1; fi
for t in ping iperf iperf3 tc ip python3; do
    command -v "$t" >/dev/null || { echo "capture_fixtures: $t missing (run scripts/setup.sh)" >&2; exit 1; }
done

pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for ns in "$CLI" "$RTR" "$SRV" $LAN_NS; do
        # anything still running inside our own namespaces was started by this script
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "/etc/netns/$CLI"; rmdir /etc/netns 2>/dev/null || true   # the client's hosts file
}
trap cleanup EXIT INT TERM

in_cli() { ip netns exec "$CLI" "$@"; }
in_srv() { ip netns exec "$SRV" "$@"; }

shape() {  # shape NS DEV: HTB root, one class at $RATE, pfifo leaf of $QUEUE packets
    tc -n "$1" qdisc add dev "$2" root handle 1: htb default 10 r2q 100
    tc -n "$1" class add dev "$2" parent 1: classid 1:10 htb rate "$RATE" ceil "$RATE"
    tc -n "$1" qdisc add dev "$2" parent 1:10 handle 10: pfifo limit "$QUEUE"
}

build_net() {
    cleanup
    ip netns add "$CLI"; ip netns add "$RTR"; ip netns add "$SRV"
    ip link add ${P}c0 type veth peer name ${P}r0
    ip link add ${P}s0 type veth peer name ${P}r1
    ip link set ${P}c0 netns "$CLI"; ip link set ${P}r0 netns "$RTR"
    ip link set ${P}r1 netns "$RTR"; ip link set ${P}s0 netns "$SRV"
    ip -n "$CLI" addr add 10.77.1.1/24 dev ${P}c0
    ip -n "$RTR" addr add 10.77.1.254/24 dev ${P}r0
    ip -n "$RTR" addr add $RTR_SRV_IP/24 dev ${P}r1
    ip -n "$SRV" addr add $SRV_IP/24 dev ${P}s0
    for ns in "$CLI" "$RTR" "$SRV"; do ip -n "$ns" link set lo up; done
    ip -n "$CLI" link set ${P}c0 up; ip -n "$SRV" link set ${P}s0 up
    ip -n "$RTR" link set ${P}r0 up; ip -n "$RTR" link set ${P}r1 up
    ip -n "$CLI" route add default via 10.77.1.254
    ip -n "$SRV" route add default via $RTR_SRV_IP
    ip netns exec "$RTR" sysctl -qw net.ipv4.ip_forward=1
    shape "$RTR" ${P}r1 2>/dev/null   # towards the server
    shape "$RTR" ${P}r0 2>/dev/null   # towards the client (-R tests)
    in_cli ping -c 1 -W 2 $SRV_IP >/dev/null   # warm ARP so the first RTT is not an outlier
}

meta() {  # meta DIR NAME TOOL VERSION COMMAND [NOTE]
    {
        echo "tool: $3"
        echo "version: $4"
        echo "command: $5"
        echo "network: namespaces cli -- rtr -- srv, HTB $RATE each way in rtr (pfifo $QUEUE), no added delay"
        echo "made: ${6:-real capture, stdout and stderr of the command, unedited}"
        echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/capture_fixtures.sh"
    } > "$1/$2.meta"
}

bg_start() {  # bg_start NS OUTFILE CMD...: run CMD in NS in the background; sets $bg_pid
    # The wrapping subshell is the parent and reports the process's death (e.g. "Killed")
    # to /dev/null, so no shell message ends up in a fixture.
    local ns=$1 outfile=$2 pidfile; shift 2
    pidfile=$(mktemp)
    ( ip netns exec "$ns" "$@" > "$outfile" 2>&1 & echo $! > "$pidfile"; wait ) 2>/dev/null &
    while [ ! -s "$pidfile" ]; do sleep 0.05; done
    bg_pid=$(cat "$pidfile"); rm -f "$pidfile"; pids+=("$bg_pid")
}

start_server() {  # start_server CMD... (in srv, output discarded); sets $srv_pid
    bg_start "$SRV" /dev/null "$@"; srv_pid=$bg_pid; sleep 0.5
}
stop_server() { kill -9 "$srv_pid" 2>/dev/null || true; sleep 0.2; }

# ---------------------------------------------------------------------------- ping ---
# ping reads every form a student brings (labtools/tools/parsers/ping.py), so the ping part
# captures iputils and busybox in their common forms. Besides cli -- rtr -- srv it adds:
#   - IPv6 on the same links: cli fd77:1::1, rtr fd77:1::fe | fd77:2::fe, srv fd77:2::1;
#   - names for the client: /etc/netns/$CLI/hosts (ip netns exec mounts it over /etc/hosts):
#     srv.lab (10.77.2.1), srv6.lab (fd77:2::1), dual.lab (both), localhost;
#   - a LAN: d0, d1, d2 (10.78.0.1-3) on a bridge in namespace lan, all answering pings to
#     the broadcast address, so one echo request gets three replies (duplicates).
# iputils does not mark a duplicate (DUP!) when it pinged a broadcast address: the capture
# shows it. Outputs of macOS and FreeBSD cannot be made here; their fixtures are published
# captures (see each .meta).
ping_net() {
    ip -n "$CLI" addr add fd77:1::1/64 dev ${P}c0 nodad
    ip -n "$RTR" addr add fd77:1::fe/64 dev ${P}r0 nodad
    ip -n "$RTR" addr add fd77:2::fe/64 dev ${P}r1 nodad
    ip -n "$SRV" addr add fd77:2::1/64 dev ${P}s0 nodad
    ip -n "$CLI" -6 route add default via fd77:1::fe
    ip -n "$SRV" -6 route add default via fd77:2::fe
    ip netns exec "$RTR" sysctl -qw net.ipv6.conf.all.forwarding=1
    # every ICMP error the router owes is sent (the default rate limit let none through for
    # the time-to-live run right after the six unreachable errors)
    ip netns exec "$RTR" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0
    mkdir -p "/etc/netns/$CLI"
    printf '%s\n' "127.0.0.1 localhost" "::1 localhost ip6-localhost" \
        "$SRV_IP srv.lab dual.lab" "fd77:2::1 srv6.lab dual.lab" > "/etc/netns/$CLI/hosts"
    ip netns add $P-lan
    ip -n $P-lan link add ${P}br type bridge
    ip -n $P-lan link set ${P}br up
    local i
    for i in 0 1 2; do
        ip netns add $P-d$i
        ip link add ${P}d$i type veth peer name ${P}l$i
        ip link set ${P}d$i netns $P-d$i; ip link set ${P}l$i netns $P-lan
        ip -n $P-lan link set ${P}l$i master ${P}br up
        ip -n $P-d$i addr add 10.78.0.$((i + 1))/24 broadcast 10.78.0.255 dev ${P}d$i
        ip -n $P-d$i link set lo up; ip -n $P-d$i link set ${P}d$i up
        ip netns exec $P-d$i sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0
    done
    in_cli ping -c 1 -W 3 fd77:2::1 >/dev/null   # neighbour discovery before the captures
    ip netns exec $P-d0 ping -c 1 -W 2 10.78.0.3 >/dev/null
}

capture_ping() {
    local d=$out/ping v bb system; mkdir -p "$d"
    command -v busybox >/dev/null || { echo "capture_fixtures: busybox missing (run scripts/setup.sh)" >&2; exit 1; }
    v=$(ping -V 2>&1 | head -1 || true)
    bb=$(busybox 2>&1 | head -1 | sed 's/ multi-call binary\.$//' || true)
    system="Debian $(cat /etc/debian_version), Linux $(uname -r), network namespaces on this machine"
    local net3="namespaces cli -- rtr -- srv (IPv4 10.77.1.0/24, 10.77.2.0/24; IPv6 fd77:1::/64, fd77:2::/64), HTB $RATE each way in rtr (pfifo $QUEUE), no added delay"
    local lan="namespaces d0, d1, d2 (10.78.0.1-3/24) on one bridge, all answering broadcast pings"
    ping_net
    pmeta() {  # pmeta NAME FORM VERSION COMMAND NETWORK [NOTE]
        {
            echo "tool: ping"
            echo "form: $2"
            echo "system: $system"
            echo "version: $3"
            echo "command: $4"
            echo "network: $5"
            echo "made: ${6:-real capture, stdout and stderr of the command, unedited}"
            echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/capture_fixtures.sh"
        } > "$d/$1.meta"
    }
    run_ping() {  # run_ping NAME ARGS... (iputils ping in cli, stdout+stderr to NAME.txt)
        local name=$1; shift
        in_cli ping "$@" > "$d/$name.txt" 2>&1 || true
        pmeta "$name" iputils "$v" "ping $*" "$net3"
    }
    run_bb() {  # run_bb NAME ARGS... (busybox ping in cli)
        local name=$1; shift
        in_cli busybox ping "$@" > "$d/$name.txt" 2>&1 || true
        pmeta "$name" busybox "$bb" "busybox ping $*" "$net3"
    }
    dropping() {  # dropping NAME FORM VERSION CMD...: srv ignores pings from 1.0 s to 2.0 s
        local name=$1 form=$2 version=$3; shift 3
        bg_start "$CLI" "$d/$name.txt" "$@"
        sleep 1.0; ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
        sleep 1.0; ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=0
        while kill -0 "$bg_pid" 2>/dev/null; do sleep 0.1; done
        pmeta "$name" "$form" "$version" "$*" "$net3" \
            "real capture; srv ignored echo requests (sysctl net.ipv4.icmp_echo_ignore_all=1) from 1.0 s to 2.0 s after the start"
    }
    stopped() {  # stopped NAME FORM VERSION SIGNAL CMD...: CMD in cli, SIGNAL after 1.1 s
        local name=$1 form=$2 version=$3 sig=$4; shift 4
        bg_start "$CLI" "$d/$name.txt" "$@"
        sleep 1.1; kill -"$sig" "$bg_pid"; sleep 0.3
        pmeta "$name" "$form" "$version" "$* (sent SIG$sig after 1.1 s)" "$net3" \
            "real capture; SIG$sig after 1.1 s$([ "$sig" = KILL ] && echo ', so no statistics lines')"
    }

    # iputils, IPv4 by address; kit_probe as the kit's probes run it (tools/args.py ping_args)
    run_ping kit_probe -D -n -c 20 -i 0.05 -s 56 $SRV_IP
    run_ping normal -c 10 -i 0.2 $SRV_IP
    run_ping timestamps -D -c 10 -i 0.2 $SRV_IP
    run_ping unreachable -c 6 -i 0.5 $NOHOST_IP
    run_ping ttl_exceeded -c 3 -i 0.2 -t 1 $SRV_IP
    ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
    run_ping total_loss -c 5 -i 0.2 -W 1 $SRV_IP
    ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=0
    # Large echo requests, faster than the shaped link and its queue: some are dropped.
    tc -n "$RTR" class change dev ${P}r1 parent 1: classid 1:10 htb rate 1mbit ceil 1mbit
    tc -n "$RTR" qdisc change dev ${P}r1 parent 1:10 handle 10: pfifo limit 3
    run_ping partial_loss -c 30 -l 8 -i 0.005 -s 1400 -W 1 $SRV_IP
    tc -n "$RTR" class change dev ${P}r1 parent 1: classid 1:10 htb rate "$RATE" ceil "$RATE"
    tc -n "$RTR" qdisc change dev ${P}r1 parent 1:10 handle 10: pfifo limit "$QUEUE"
    run_ping pattern -c 3 -i 0.2 -p abcd $SRV_IP
    run_ping size -c 3 -i 0.2 -s 1000 $SRV_IP
    run_ping size_untimed -c 3 -i 0.2 -s 8 $SRV_IP
    run_ping interface -c 3 -i 0.2 -I ${P}c0 $SRV_IP
    run_ping quiet -q -c 5 -i 0.2 $SRV_IP
    run_ping flood -f -c 50 $SRV_IP
    run_ping verbose -v -c 3 -i 0.2 $SRV_IP
    run_ping audible -a -c 3 -i 0.2 $SRV_IP   # a bell character ends each reply line
    run_ping outstanding_unreachable -O -c 4 -i 0.5 $NOHOST_IP
    dropping outstanding iputils "$v" ping -D -O -c 15 -i 0.2 -W 1 $SRV_IP
    # Killed: SIGKILL leaves no statistics; SIGINT (Ctrl-C) prints them.
    stopped killed iputils "$v" KILL ping -i 0.2 $SRV_IP
    stopped interrupted iputils "$v" INT ping -i 0.2 $SRV_IP
    in_cli ping -c 2 nosuchhost.invalid > "$d/unknown_host.txt" 2>&1 || true
    pmeta unknown_host iputils "$v" "ping -c 2 nosuchhost.invalid" "$net3" \
        "real capture; name resolution fails inside the namespace, no packet is sent"
    # iputils, names (the client's hosts file) and IPv6
    run_ping names -c 3 -i 0.2 srv.lab
    run_ping names_source -c 3 -i 0.2 -I 10.77.1.1 srv.lab
    run_ping empty_name -4 -c 3 -i 0.2 dual.lab   # the name's first address is IPv6
    run_ping localhost -c 3 -i 0.2 localhost
    run_ping ipv6 -c 3 -i 0.2 fd77:2::1
    run_ping ipv6_names -c 3 -i 0.2 srv6.lab
    run_ping ipv6_other_name -6 -c 3 -i 0.2 dual.lab
    run_ping ipv6_interface -c 3 -i 0.2 -I ${P}c0 fd77:2::1
    run_ping ipv6_unreachable -c 3 -i 0.5 fd77:2::99
    dropping outstanding_names iputils "$v" ping -O -c 15 -i 0.2 -W 1 srv.lab
    # iputils and busybox: a broadcast ping on the LAN, every reply after the first a duplicate
    ip netns exec $P-d0 ping -b -c 3 -i 0.3 10.78.0.255 > "$d/duplicates.txt" 2>&1 || true
    pmeta duplicates iputils "$v" "ping -b -c 3 -i 0.3 10.78.0.255" "$lan"
    ip netns exec $P-d0 busybox ping -c 3 10.78.0.255 > "$d/busybox_duplicates.txt" 2>&1 || true
    pmeta busybox_duplicates busybox "$bb" "busybox ping -c 3 10.78.0.255" "$lan"

    # busybox (Alpine and most small container images)
    run_bb busybox_normal -c 5 $SRV_IP
    run_bb busybox_names -c 3 srv.lab
    run_bb busybox_ipv6 -c 3 fd77:2::1
    run_bb busybox_ipv6_names -6 -c 3 srv6.lab
    run_bb busybox_size -c 3 -s 1000 $SRV_IP
    run_bb busybox_interface -c 3 -I ${P}c0 $SRV_IP
    run_bb busybox_pattern -c 3 -p ab $SRV_IP
    run_bb busybox_quiet -q -c 3 $SRV_IP
    run_bb busybox_unreachable -c 3 -W 1 $NOHOST_IP
    ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
    run_bb busybox_total_loss -c 3 -W 1 $SRV_IP
    ip netns exec "$SRV" sysctl -qw net.ipv4.icmp_echo_ignore_all=0
    dropping busybox_dropping busybox "$bb" busybox ping -c 4 $SRV_IP
    stopped busybox_killed busybox "$bb" KILL busybox ping $SRV_IP
    stopped busybox_interrupted busybox "$bb" INT busybox ping $SRV_IP
    in_cli busybox ping -c 1 nosuchhost.invalid > "$d/busybox_unknown_host.txt" 2>&1 || true
    pmeta busybox_unknown_host busybox "$bb" "busybox ping -c 1 nosuchhost.invalid" "$net3" \
        "real capture; name resolution fails inside the namespace, no packet is sent"
}

# -------------------------------------------------------------------------- iperf3 ---
capture_iperf3() {
    local d=$out/iperf3 v port=5311; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    run3() {  # run3 NAME SERVER_ARGS CLIENT_ARGS...
        local name=$1 sargs=$2; shift 2
        port=$((port + 1))
        start_server iperf3 -s -1 -p $port $sargs
        in_cli timeout 30 iperf3 -c $SRV_IP -p $port "$@" > "$d/$name.json" 2>&1 || true
        stop_server
        meta "$d" "$name" iperf3 "$v" "server: iperf3 -s -1 -p $port $sargs; client: iperf3 -c $SRV_IP -p $port $*"
    }
    run3 tcp_p1 "" -J -t 3 -i 1
    run3 tcp_p3 "" -J -t 3 -i 1 -P 3
    run3 tcp_omit "" -J -t 3 -i 1 -O 1
    run3 tcp_reverse "" -J -t 3 -i 1 -R
    run3 tcp_server_output "-J" -J -t 3 -i 1 --get-server-output
    run3 tcp_server_output_text "" -J -t 2 -i 1 --get-server-output
    run3 udp_p1 "" -J -u -b 30M -t 3 -i 1
    run3 udp_p2 "" -J -u -b 8M -t 3 -i 1 -P 2
    run3 udp_reverse "" -J -u -b 10M -t 3 -i 1 -R

    port=$((port + 1))
    in_cli iperf3 -c $SRV_IP -p $port -J -t 2 > "$d/no_server.json" 2>&1 || true
    meta "$d" no_server iperf3 "$v" "iperf3 -c $SRV_IP -p $port -J -t 2 (no server listening)"

    port=$((port + 1))
    start_server iperf3 -s -p $port
    ( sleep 2.5; kill -9 "$srv_pid" ) &
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -J -t 5 -i 1 > "$d/server_killed.json" 2>&1 || true
    wait
    meta "$d" server_killed iperf3 "$v" "server: iperf3 -s -p $port, killed with SIGKILL 2.5 s after start; client: iperf3 -c $SRV_IP -p $port -J -t 5 -i 1"

    port=$((port + 1))
    start_server iperf3 -s -1 -p $port
    in_cli timeout -s INT 2.5 iperf3 -c $SRV_IP -p $port -J -t 5 -i 1 > "$d/client_interrupted.json" 2>&1 || true
    stop_server
    meta "$d" client_interrupted iperf3 "$v" "timeout -s INT 2.5 iperf3 -c $SRV_IP -p $port -J -t 5 -i 1 (client interrupted like Ctrl-C)"

    # UDP where nothing arrives: the router drops every UDP datagram (pfifo limit 0), so
    # the UDP handshake never completes and the client is interrupted: rates are NaN,
    # which iperf3 3.12 (cJSON) prints as null.
    port=$((port + 1))
    tc -n "$RTR" class add dev ${P}r1 parent 1: classid 1:20 htb rate "$RATE" 2>/dev/null
    tc -n "$RTR" qdisc add dev ${P}r1 parent 1:20 handle 20: pfifo limit 0
    tc -n "$RTR" filter add dev ${P}r1 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:20
    start_server iperf3 -s -1 -p $port
    in_cli timeout -s INT 4 iperf3 -c $SRV_IP -p $port -J -u -b 1M -t 2 > "$d/udp_nothing_arrives.json" 2>&1 || true
    stop_server
    tc -n "$RTR" filter del dev ${P}r1 parent 1: prio 1
    meta "$d" udp_nothing_arrives iperf3 "$v" "timeout -s INT 4 iperf3 -c $SRV_IP -p $port -J -u -b 1M -t 2 (router drops all UDP: tc u32 match ip protocol 17 -> pfifo limit 0)"

    # UDP where the handshake datagram passes but every data datagram is dropped (u32 on
    # protocol 17 and IP total length with bit 0x400 set, i.e. the 1476-byte datagrams).
    port=$((port + 1))
    tc -n "$RTR" filter add dev ${P}r1 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match u16 0x0400 0x0400 at 2 flowid 1:20
    start_server iperf3 -s -1 -p $port
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -J -u -b 5M -t 2 -i 1 > "$d/udp_all_lost.json" 2>&1 || true
    stop_server
    tc -n "$RTR" filter del dev ${P}r1 parent 1: prio 1
    meta "$d" udp_all_lost iperf3 "$v" "iperf3 -c $SRV_IP -p $port -J -u -b 5M -t 2 -i 1 (router drops every UDP datagram of 1024 bytes or more: tc u32 match ip protocol 17 + match u16 0x0400 0x0400 at 2 -> pfifo limit 0)"

    in_cli iperf3 -c $SRV_IP -J -P 200 > "$d/bad_option.json" 2>&1 || true
    meta "$d" bad_option iperf3 "$v" "iperf3 -c $SRV_IP -J -P 200 (parameter error: usage text, no JSON)"

    # Derived cases (iperf3 3.12 did not produce them here; older versions did).
    cat "$d/tcp_p1.json" "$d/tcp_p1.json" > "$d/derived_twice.json"
    meta "$d" derived_twice iperf3 "$v" "cat tcp_p1.json tcp_p1.json" \
        "DERIVED: the real tcp_p1.json printed twice (mechanical: cat a a)"
    { cat "$d/server_killed.json"
      python3 -c 'import json,sys; print("iperf3: error - " + json.load(open(sys.argv[1]))["error"])' "$d/server_killed.json"
    } > "$d/derived_error_line.json"
    meta "$d" derived_error_line iperf3 "$v" "server_killed.json + 'iperf3: error - ' + its error field" \
        "DERIVED: the real server_killed.json followed by one line 'iperf3: error - <its own error field>' as iperf3 prints it on stderr"
    sed -e 's/:\([[:space:]]*\)null/:\1-nan/' "$d/udp_nothing_arrives.json" > "$d/derived_nan.json"
    meta "$d" derived_nan iperf3 "$v" "sed 's/:\\([[:space:]]*\\)null/:\\1-nan/' udp_nothing_arrives.json" \
        "DERIVED: the real udp_nothing_arrives.json with each JSON null (a NaN) written as -nan, as iperf3 versions before cJSON 1.7 print NaN"
    impossible_total sum derived_sum_impossible
    impossible_total sum_received derived_received_impossible
}

# impossible_total TOTAL NAME: udp_p1.json with end.TOTAL's lost_packets -3 and lost_percent
# 250 (totals no run gives; its streams' own reports left as printed)
impossible_total() {
    local d=$out/iperf3 v edit
    v=$(iperf3 --version 2>&1 | head -1 || true)
    edit="import re,sys; t=open(sys.argv[1]).read(); e=t.index('\"end\":\t{'); i=t.index('\"$1\":', e); j=t.index('}', i); b=re.sub(r'(\"lost_packets\":\s*)\d+', r'\g<1>-3', t[i:j]); b=re.sub(r'(\"lost_percent\":\s*)[\d.]+', r'\g<1>250', b); sys.stdout.write(t[:i] + b + t[j:])"
    python3 -c "$edit" "$d/udp_p1.json" > "$d/$2.json"
    meta "$d" "$2" iperf3 "$v" "python3 -c \"$edit\" udp_p1.json" \
        "DERIVED: the real udp_p1.json with end.$1's lost_packets written as -3 and lost_percent as 250 (mechanical: the two numbers of that object replaced), its streams' own reports left as printed"
}

# iperf3's human-readable text (no -J): what `labtools parse iperf` must recognise and refuse
capture_iperf3_text() {
    local d=$out/iperf3 v port=5399; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    start_server iperf3 -s -1 -p $port
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -t 2 -i 1 > "$d/tcp_text.txt" 2>&1 || true
    stop_server
    meta "$d" tcp_text iperf3 "$v" "server: iperf3 -s -1 -p $port; client: iperf3 -c $SRV_IP -p $port -t 2 -i 1 (text output, no -J)"
}

# iperf3 --bidir (3.7+): one stream each way; the server's own JSON report is included
capture_iperf3_bidir() {
    local d=$out/iperf3 v port=5398; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    start_server iperf3 -s -1 -p $port -J
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -J -t 3 -i 1 --bidir --get-server-output > "$d/tcp_bidir.json" 2>&1 || true
    stop_server
    meta "$d" tcp_bidir iperf3 "$v" "server: iperf3 -s -1 -p $port -J; client: iperf3 -c $SRV_IP -p $port -J -t 3 -i 1 --bidir --get-server-output"
}

# iperf3 -J in the forms a student's saved output takes, each on the client namespace's
# own loopback (127.0.0.1, no shaping): a warning line before the JSON (-f with -J), the
# JSON as a terminal shows it (bash's bracketed-paste escape and prompt around it, CRLF
# line ends: `script` records an interactive shell), --logfile's file, UDP loss, -R -P 2.
# iperf3 3.12 has no --json-stream (3.17 added it): `iperf3 --json-stream` is refused.
capture_iperf3_forms() {
    local d=$out/iperf3 v port=5371 name; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    lo_meta() {  # lo_meta NAME COMMAND [NOTE]
        {
            echo "tool: iperf3"
            echo "version: $v"
            echo "command: $2"
            echo "network: the cli namespace's loopback 127.0.0.1 (no shaping)"
            echo "made: ${3:-real capture, stdout and stderr of the command, unedited}"
            echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/capture_fixtures.sh"
        } > "$d/$1.meta"
    }
    lo_run() {  # lo_run NAME CLIENT_ARGS...: server iperf3 -s -1 on 127.0.0.1 in cli
        name=$1; shift; port=$((port + 1))
        bg_start "$CLI" /dev/null iperf3 -s -1 -B 127.0.0.1 -p $port; srv_pid=$bg_pid; sleep 0.5
        in_cli timeout 30 iperf3 -c 127.0.0.1 -p $port "$@" > "$d/$name.json" 2>&1 || true
        stop_server
        lo_meta "$name" "server: iperf3 -s -1 -B 127.0.0.1 -p $port; client: iperf3 -c 127.0.0.1 -p $port $*"
    }
    lo_run lo_warning_before -J -t 2 -f m
    lo_run lo_udp_loss -J -u -b 3G -l 1400 -t 2
    lo_run lo_reverse_p2 -J -R -P 2 -t 2

    port=$((port + 1))
    bg_start "$CLI" /dev/null iperf3 -s -1 -B 127.0.0.1 -p $port; srv_pid=$bg_pid; sleep 0.5
    rm -f "$d/lo_logfile.json"
    in_cli timeout 30 iperf3 -c 127.0.0.1 -p $port -J -t 2 --logfile "$d/lo_logfile.json" > /dev/null 2>&1 || true
    stop_server
    lo_meta lo_logfile "server: iperf3 -s -1 -B 127.0.0.1 -p $port; client: iperf3 -c 127.0.0.1 -p $port -J -t 2 --logfile lo_logfile.json" \
        "real capture: the file iperf3 wrote with --logfile, unedited"

    port=$((port + 1))
    bg_start "$CLI" /dev/null iperf3 -s -1 -B 127.0.0.1 -p $port; srv_pid=$bg_pid; sleep 0.5
    printf 'iperf3 -c 127.0.0.1 -p %s -J -t 2\nexit\n' $port \
        | in_cli timeout 30 script -q -c "bash --norc -i" /dev/null > "$d/lo_terminal.json" 2>&1 || true
    stop_server
    lo_meta lo_terminal "printf 'iperf3 -c 127.0.0.1 -p $port -J -t 2\\nexit\\n' | script -q -c 'bash --norc -i' /dev/null (server: iperf3 -s -1 -B 127.0.0.1 -p $port)" \
        "real capture: what the terminal showed (util-linux script recording an interactive bash: typed lines, prompts, bracketed-paste escapes, CRLF line ends), unedited"

    in_cli iperf3 -c 127.0.0.1 -p $port --json-stream -t 1 > "$d/lo_no_json_stream.txt" 2>&1 || true
    lo_meta lo_no_json_stream "iperf3 -c 127.0.0.1 -p $port --json-stream -t 1 (3.12 has no --json-stream)"
}

# -------------------------------------------------------------------------- iperf2 ---
capture_iperf2() {
    local d=$out/iperf2 v port=5411; mkdir -p "$d"
    v=$(iperf -v 2>&1 | head -1 || true)
    run2() {  # run2 NAME SERVER_ARGS CLIENT_ARGS... ; also saves the server's text
        local name=$1 sargs=$2; shift 2
        port=$((port + 1))
        bg_start "$SRV" "$d/$name.server.txt" iperf -s -p $port $sargs
        srv_pid=$bg_pid; sleep 0.5
        in_cli timeout 30 iperf -c $SRV_IP -p $port "$@" > "$d/$name.txt" 2>&1 || true
        sleep 1; stop_server
        meta "$d" "$name" iperf "$v" "iperf -c $SRV_IP -p $port $* (server: iperf -s -p $port $sargs)"
        meta "$d" "$name.server" iperf "$v" "iperf -s -p $port $sargs (client: iperf -c $SRV_IP -p $port $*)" \
            "real capture of the server's stdout+stderr; server killed with SIGKILL 1 s after the client ended"
    }
    run2 tcp "" -t 3
    run2 tcp_interval "" -t 3 -i 1
    run2 tcp_p2 "" -t 3 -i 1 -P 2
    run2 tcp_p2_nointerval "" -t 3 -P 2
    run2 udp_overload "-u" -u -b 30M -t 3
    run2 udp_interval "-u -i 1" -u -b 10M -t 3 -i 1
    port=$((port + 1))
    in_cli iperf -c $SRV_IP -p $port -t 2 > "$d/no_server.txt" 2>&1 || true
    meta "$d" no_server iperf "$v" "iperf -c $SRV_IP -p $port -t 2 (no server listening)"
    capture_iperf2_rate
    capture_iperf2_forms
    capture_iperf2_dual
}

# iperf 2 reads -b's K/M/G as powers of 2 (udp_interval: -b 10M gives an IPG of 1121.52 us
# for 1470-byte datagrams = 10.49 Mbit/s); the kit gives it bits per second: this capture
# shows the rate it then offers (IPG 1176 us = 10.00 Mbit/s)
capture_iperf2_rate() {
    local d=$out/iperf2 v; mkdir -p "$d"
    v=$(iperf -v 2>&1 | head -1 || true)
    port=5431
    bg_start "$SRV" "$d/udp_bps.server.txt" iperf -s -p $port -u -i 1
    srv_pid=$bg_pid; sleep 0.5
    in_cli timeout 30 iperf -c $SRV_IP -p $port -u -b 10000000 -l 1470 -t 3 -i 1 > "$d/udp_bps.txt" 2>&1 || true
    sleep 1; stop_server
    meta "$d" udp_bps iperf "$v" "iperf -c $SRV_IP -p $port -u -b 10000000 -l 1470 -t 3 -i 1 (server: iperf -s -p $port -u -i 1)"
    meta "$d" udp_bps.server iperf "$v" "iperf -s -p $port -u -i 1 (client: iperf -c $SRV_IP -p $port -u -b 10000000 -l 1470 -t 3 -i 1)" \
        "real capture of the server's stdout+stderr; server killed with SIGKILL 1 s after the client ended"
}

# iperf 2 forms a student's output may have, on loopback (127.0.0.1) inside the client's
# namespace: UDP -P 2 and -P 3 (a Server Report per stream), CSV (-y C), --dualtest and
# --tradeoff (-L: the client's own listening port, as on one host the server's port is
# taken), a UDP run where nothing arrives for 2 s (the server's interval prints 0/0 (-nan%))
# and one where no data datagram arrives at all (iperf 2.1.8's server then prints no report:
# its first datagram opens the flow). The drops: tc u32 on lo -> an HTB class with pfifo 0.
capture_iperf2_forms() {
    local d=$out/iperf2 v port=5440 lo="loopback 127.0.0.1 inside namespace $CLI (no shaping)"
    mkdir -p "$d"
    v=$(iperf -v 2>&1 | head -1 || true)
    lmeta() {  # lmeta NAME COMMAND [NOTE]
        meta "$d" "$1" iperf "$v" "$2" "${3:-}"
        sed -i "s|^network: .*|network: $lo|" "$d/$1.meta"
    }
    run2l() {  # run2l NAME SERVER_ARGS CLIENT_ARGS...: client and server text, on loopback
        local name=$1 sargs=$2; shift 2
        port=$((port + 2))
        bg_start "$CLI" "$d/$name.server.txt" iperf -s -p $port $sargs
        srv_pid=$bg_pid; sleep 0.5
        in_cli timeout 30 iperf -c 127.0.0.1 -p $port "$@" > "$d/$name.txt" 2>&1 || true
        sleep 1; stop_server
        lmeta "$name" "iperf -c 127.0.0.1 -p $port $* (server: iperf -s -p $port $sargs)"
        lmeta "$name.server" "iperf -s -p $port $sargs (client: iperf -c 127.0.0.1 -p $port $*)" \
            "real capture of the server's stdout+stderr; server killed with SIGKILL 1 s after the client ended"
    }
    run2l udp_p2 "-u" -u -b 10M -t 2 -P 2
    run2l udp_p3 "-u" -u -b 10M -t 2 -P 3
    run2l udp_p2_interval "-u -i 1" -u -b 10M -t 2 -i 1 -P 2
    run2l csv_tcp "-y C" -t 2 -y C
    run2l csv_udp "-u -y C" -u -b 5M -t 2 -y C
    run2l csv_udp_p2_interval "-u -y C -i 1" -u -b 5M -t 2 -i 1 -P 2 -y C
    run2l tcp_dualtest "" -t 2 -d -L $((port + 3))
    run2l tcp_tradeoff "" -t 2 -r -L $((port + 3))
    run2l udp_dualtest "-u" -u -b 5M -t 2 -d -L $((port + 3))

    tc -n "$CLI" qdisc add dev lo root handle 1: htb default 10 2>/dev/null
    tc -n "$CLI" class add dev lo parent 1: classid 1:10 htb rate 10gbit 2>/dev/null
    tc -n "$CLI" class add dev lo parent 1: classid 1:20 htb rate 10gbit 2>/dev/null
    tc -n "$CLI" qdisc add dev lo parent 1:20 handle 20: pfifo limit 0
    local drop_udp="tc -n $CLI filter add dev lo parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff"
    # nothing arrives from 0.7 s to 2.9 s after the client starts
    port=$((port + 2))
    bg_start "$CLI" "$d/udp_gap.server.txt" iperf -s -p $port -u -i 1
    srv_pid=$bg_pid; sleep 0.5
    bg_start "$CLI" "$d/udp_gap.txt" timeout 30 iperf -c 127.0.0.1 -p $port -u -b 1M -t 4 -i 1
    sleep 0.7; $drop_udp flowid 1:20; sleep 2.2; tc -n "$CLI" filter del dev lo parent 1: prio 1
    while kill -0 "$bg_pid" 2>/dev/null; do sleep 0.1; done
    sleep 1; stop_server
    local gap="real capture; every UDP datagram on lo dropped (tc u32 match ip protocol 17 -> pfifo limit 0) from 0.7 s to 2.9 s after the client started"
    lmeta udp_gap "iperf -c 127.0.0.1 -p $port -u -b 1M -t 4 -i 1 (server: iperf -s -p $port -u -i 1)" "$gap"
    lmeta udp_gap.server "iperf -s -p $port -u -i 1 (client: iperf -c 127.0.0.1 -p $port -u -b 1M -t 4 -i 1)" \
        "$gap; server killed with SIGKILL 1 s after the client ended"
    # no data datagram arrives (sequence number >= 0, the first 4 bytes of the payload);
    # only the client's final datagrams (negative sequence numbers) pass
    port=$((port + 2))
    $drop_udp match u32 0 0x80000000 at 28 flowid 1:20
    bg_start "$CLI" "$d/udp_nothing_arrives.server.txt" iperf -s -p $port -u
    srv_pid=$bg_pid; sleep 0.5
    in_cli timeout 40 iperf -c 127.0.0.1 -p $port -u -b 1M -t 2 > "$d/udp_nothing_arrives.txt" 2>&1 || true
    sleep 1; stop_server
    tc -n "$CLI" filter del dev lo parent 1: prio 1
    local none="real capture; every UDP datagram on lo with a sequence number >= 0 dropped (tc u32 match ip protocol 17, match u32 0 0x80000000 at 28 -> pfifo limit 0)"
    lmeta udp_nothing_arrives "iperf -c 127.0.0.1 -p $port -u -b 1M -t 2 (server: iperf -s -p $port -u)" "$none"
    lmeta udp_nothing_arrives.server "iperf -s -p $port -u (client: iperf -c 127.0.0.1 -p $port -u -b 1M -t 2)" \
        "$none; server killed with SIGKILL 1 s after the client ended"
    tc -n "$CLI" qdisc del dev lo root
}

# --dualtest (-d) and --tradeoff (-r) in iperf 2's CSV (-y C), TCP and UDP, client and
# server, on loopback as capture_iperf2_forms (-L: the client's own listening port); and
# a UDP --tradeoff in text. Each direction's lines name their own addresses and ports.
capture_iperf2_dual() {
    local d=$out/iperf2 v port=5470 lo="loopback 127.0.0.1 inside namespace $CLI (no shaping)"
    mkdir -p "$d"
    v=$(iperf -v 2>&1 | head -1 || true)
    run2d() {  # run2d NAME SERVER_ARGS CLIENT_ARGS...: client and server output, on loopback
        local name=$1 sargs=$2; shift 2
        port=$((port + 4))
        bg_start "$CLI" "$d/$name.server.txt" iperf -s -p $port $sargs
        srv_pid=$bg_pid; sleep 0.5
        in_cli timeout 30 iperf -c 127.0.0.1 -p $port "$@" -L $((port + 1)) > "$d/$name.txt" 2>&1 || true
        sleep 1; stop_server
        meta "$d" "$name" iperf "$v" "iperf -c 127.0.0.1 -p $port $* -L $((port + 1)) (server: iperf -s -p $port $sargs)"
        meta "$d" "$name.server" iperf "$v" "iperf -s -p $port $sargs (client: iperf -c 127.0.0.1 -p $port $* -L $((port + 1)))" \
            "real capture of the server's stdout+stderr; server killed with SIGKILL 1 s after the client ended"
        sed -i "s|^network: .*|network: $lo|" "$d/$name.meta" "$d/$name.server.meta"
    }
    run2d csv_tcp_dualtest "-y C" -t 2 -d -y C
    run2d csv_tcp_tradeoff "-y C" -t 2 -r -y C
    run2d csv_udp_dualtest "-u -y C" -u -b 5M -t 2 -d -y C
    run2d csv_udp_tradeoff "-u -y C" -u -b 5M -t 2 -r -y C
    run2d csv_udp_dualtest_interval "-u -y C -i 1" -u -b 5M -t 2 -i 1 -d -y C
    run2d udp_tradeoff "-u" -u -b 5M -t 2 -r
}

# a server killed while the client still omits its warm-up (-O): iperf3 3.12 reports the
# error and an interval that ends before it starts (its clock restarts when -O ends)
capture_iperf3_killed_in_omit() {
    local d=$out/iperf3 v port=5361; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    start_server iperf3 -s -1 -J -p $port
    ( sleep 1.52; kill -9 "$srv_pid" ) &
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -t 6 -i 1 -O 1.5 -J --get-server-output \
        > "$d/server_killed_in_omit.json" 2>&1 || true
    wait
    meta "$d" server_killed_in_omit iperf3 "$v" "server: iperf3 -s -1 -J -p $port, killed with SIGKILL 1.52 s after the client started; client: iperf3 -c $SRV_IP -p $port -t 6 -i 1 -O 1.5 -J --get-server-output"
}

# the kit's own form of a -P run: the server's JSON report carries each connection's
# receiver intervals (Jain's index is computed per connection from them)
capture_iperf3_streams() {
    local d=$out/iperf3 v port=5341; mkdir -p "$d"
    v=$(iperf3 --version 2>&1 | head -1 || true)
    start_server iperf3 -s -1 -J -p $port
    in_cli timeout 30 iperf3 -c $SRV_IP -p $port -t 4 -i 1 -J --get-server-output -O 1 -P 3 \
        > "$d/tcp_p3_server_output.json" 2>&1 || true
    stop_server
    meta "$d" tcp_p3_server_output iperf3 "$v" "server: iperf3 -s -1 -J -p $port; client: iperf3 -c $SRV_IP -p $port -t 4 -i 1 -J --get-server-output -O 1 -P 3"
}

# ss -tin on the sender while a window-limited iperf3 transfer runs (the socket's real
# window, congestion window, RTT and what limited it)
capture_ss() {
    local d=$out/ss v port=5351 w; mkdir -p "$d"
    v=$(ss -V 2>&1 | head -1 || true)
    for w in 25000 100000; do
        port=$((port + 1))
        start_server iperf3 -s -1 -p $port
        in_cli timeout 30 iperf3 -c $SRV_IP -p $port -t 4 -w $w > /dev/null 2>&1 &
        sleep 2.5
        in_cli ss -tin dst $SRV_IP > "$d/window_$w.txt" 2>&1 || true
        wait; stop_server
        meta "$d" "window_$w" ss "$v" "ss -tin dst $SRV_IP (2.5 s into: iperf3 -c $SRV_IP -p $port -t 4 -w $w)"
    done
}

build_net
case $only in
    all) capture_ping; capture_iperf3; capture_iperf3_text; capture_iperf3_bidir; capture_iperf3_forms; capture_iperf2; capture_iperf3_streams; capture_iperf3_killed_in_omit; capture_ss ;;
    ping) capture_ping ;;
    iperf3) capture_iperf3; capture_iperf3_text; capture_iperf3_bidir; capture_iperf3_forms ;;
    iperf3-text) capture_iperf3_text ;;
    iperf3-bidir) capture_iperf3_bidir ;;
    iperf3-forms) capture_iperf3_forms ;;
    iperf2) capture_iperf2 ;;
    iperf2-rate) capture_iperf2_rate ;;
    iperf2-forms) capture_iperf2_forms ;;
    iperf2-dual) capture_iperf2_dual ;;
    iperf3-streams) capture_iperf3_streams ;;
    iperf3-killed-in-omit) capture_iperf3_killed_in_omit ;;
    ss) capture_ss ;;
    *) echo "capture_fixtures: unknown part $only (ping, iperf3, iperf3-text, iperf3-bidir, iperf3-forms, iperf2, iperf2-rate, iperf2-forms, iperf2-dual, iperf3-streams, iperf3-killed-in-omit, ss)" >&2; exit 2 ;;
esac
echo "capture_fixtures: wrote $out/{ping,iperf3,iperf2}"
