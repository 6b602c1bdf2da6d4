"""Lanes: one large body fetched as byte ranges over several network interfaces at once.

`schedule.py` decides which lane fetches which range (sans-I/O), `reassembly.py` puts the ranges back in
order, `estimate.py` keeps each lane's smoothed RTT and throughput, `interfaces.py` finds the interfaces
and their policy, `split_fetch.py` is the asyncio shell over the engine."""
