"""What lets other tools read our traffic: pcapng export (`pcapng`, `tcp_export`), a Wireshark
dissector generated from the profile (`dissector`), and flows as a SQL table (`flow_table`)."""
