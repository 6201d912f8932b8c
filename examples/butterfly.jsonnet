// The butterfly of early ZeroMQ's tutorial (a request fan-out and fan-in
// measured against theory), as a ptmp graph:
//
//   send_requests -> component1 x c1 -> intermediate -> component2 x c2
//                 -> receive_replies -> (done) -> send_requests
//
// Work is simulated by waiting t1 and t2 milliseconds per transaction; the
// pushpull edges deal transactions round-robin over the instances. When
// receive_replies has all n, it tells send_requests on the done edge, and
// send_requests reports n / (time from its first send to done).
// Theory: throughput = min(c1 / t1, c2 / t2).
//
//   ptmp graph run examples/butterfly.jsonnet --tla-code c1=2 --tla-code c2=2
//   ptmp butterfly --c1 2 --c2 2 --t1 50 --t2 50 -n 100     (the same, timed)
//
// transport: 'auto' lets the runner choose (shm for one-to-one edges
// between processes, ipc for round-robin fan-out, inproc inside a
// process), or force one of inproc, ipc, shm, tcp on every edge where it
// can carry it. placement: 'process' puts every node in its own process
// (the tutorial's separate programs); 'thread' puts them all in one.
function(c1=1, c2=1, t1=50, t2=50, n=100, transport='auto', placement='process',
         wait='sleep', name='butterfly', port_base=17100)
  local c1s = ['component1_%d' % i for i in std.range(1, c1)];
  local c2s = ['component2_%d' % i for i in std.range(1, c2)];
  local worker(nm, t) = { name: nm, type: 'worker', data: { work_us: t * 1000, wait: wait } };
  // Pinning a transport: shm cannot deal round-robin, so fanned-out
  // pushpull edges keep the runner's choice; the done edge is a pair.
  local tr(fan) = if transport == 'auto' || (transport == 'shm' && fan) then {} else { transport: transport };
  local all = ['send_requests'] + c1s + ['intermediate'] + c2s + ['receive_replies'];
  {
    name: name,
    port_base: port_base,
    nodes: [{ name: 'send_requests', type: 'source', data: { count: n } }]
           + [worker(c, t1) for c in c1s]
           + [{ name: 'intermediate', type: 'proxy' }]
           + [worker(c, t2) for c in c2s]
           + [{ name: 'receive_replies', type: 'sink', data: { count: n } }],
    edges: [
      { from: 'send_requests.out', to: [c + '.in' for c in c1s], pattern: 'pushpull' } + tr(c1 > 1),
      { from: [c + '.out' for c in c1s], to: 'intermediate.in', pattern: 'pushpull' } + tr(c1 > 1),
      { from: 'intermediate.out', to: [c + '.in' for c in c2s], pattern: 'pushpull' } + tr(c2 > 1),
      { from: [c + '.out' for c in c2s], to: 'receive_replies.in', pattern: 'pushpull' } + tr(c2 > 1),
      { from: 'receive_replies.done', to: 'send_requests.done', pattern: 'pair' } + tr(true),
    ],
    processes: if placement == 'thread' then [{ name: 'all', nodes: all }] else [],
  }
