# Control-plane frames and messages (fabric/wire, the agent's argument validation), and the
# session handshake.
fabkit_add_fuzzer(wire_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/wire_fuzz.cc fabkit_agent_requests fabkit_wire)
fabkit_add_fuzzer(handshake_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/handshake_fuzz.cc fabkit_wire)
