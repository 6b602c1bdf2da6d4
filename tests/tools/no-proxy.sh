# Sourced by test.sh, start.sh and bench.sh once set-up is done: what they run talks only to loopback and network
# namespaces they make. A proxy in this shell's environment (set-up may have needed it) would be the system proxy of
# every browser and helper they start, and lanefetch stays off under a system proxy (README, "A proxy is set");
# the tests that check that set their own.
unset http_proxy https_proxy all_proxy ftp_proxy no_proxy auto_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY FTP_PROXY NO_PROXY SOCKS_SERVER
