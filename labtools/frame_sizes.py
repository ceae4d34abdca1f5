"""Sizes of what the lab's links carry, in bytes: the headers of a frame, the largest frame,
TCP's payload per frame and iperf's UDP datagram.

A base module (no imports): the expected values (:mod:`labtools.model.expect`, which
explains the physics) and the tools' argument builders (:mod:`labtools.tools.args`) take
them from here, so each size is written once.
"""

ETH_HEADER_BYTES = 14
IPV4_HEADER_BYTES = 20
#: 20 bytes and the 12-byte timestamp option Linux sends by default
TCP_HEADER_BYTES = 32
UDP_HEADER_BYTES = 8
ICMP_HEADER_BYTES = 8
MTU_BYTES = 1500
#: TCP payload of a full segment: 1448
TCP_MSS_BYTES = MTU_BYTES - IPV4_HEADER_BYTES - TCP_HEADER_BYTES
#: a full Ethernet frame, as HTB counts it: 1514
TCP_FRAME_BYTES = MTU_BYTES + ETH_HEADER_BYTES
#: the largest UDP payload one frame carries: 1472
MAX_UDP_PAYLOAD_BYTES = MTU_BYTES - IPV4_HEADER_BYTES - UDP_HEADER_BYTES
#: iperf's UDP datagram (iperf 2's default, the kit's): 1470 bytes of payload
IPERF_UDP_PAYLOAD_BYTES = 1470
#: the frame one such datagram travels in: 1512
IPERF_UDP_FRAME_BYTES = IPERF_UDP_PAYLOAD_BYTES + UDP_HEADER_BYTES + IPV4_HEADER_BYTES + \
    ETH_HEADER_BYTES
