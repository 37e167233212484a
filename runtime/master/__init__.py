"""The master's side of the runtime: the ``Cluster`` a user holds, the thread serving its
socket (``driver``), each job's run (``jobrun``: a state machine taking ``events`` and
returning instructions) made from its plan (``jobs`` and ``options`` for a coded job,
``plans`` for the other kinds), the workers it knows (``roster``) and the engines that
start them (``engines``, ``pool``, ``ray_pool``); resident data (``resident``), coded
MapReduce's phases (``mapreduce``) and a relay's group (``group``, ``forwarding``)."""
