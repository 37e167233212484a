"""The workers' side of the runtime: a worker process (``process``, the shell around two
state machines without I/O: its jobs in turn, ``taskqueue``, and its messages out,
``outbox``), a coded job's steps (``coded``), a relay between a group of workers and the
master (``relay``) and coded MapReduce's phases on a worker (``shuffler``). Nothing here
imports the master's side: a relay reaches its group through the narrow
``relay.GroupRunner`` protocol, given to it by the entry point."""
