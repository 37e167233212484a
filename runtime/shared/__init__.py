"""What the master's side and the workers' side of the runtime share: the wire's frames
(``wire``), a task's typed values (``task``), the sockets and their gate (``transport``,
``gate``, ``keys``), injected faults (``faults``), job reports (``report``), the job kinds'
registry (``kinds``) and the master's local processes' common ground (``local``)."""
