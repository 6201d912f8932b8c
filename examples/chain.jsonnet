// A trigger chain as PTMP runs one at protoDUNE, fed by two independent
// sources on the same data clock:
//
//   ptmp send (link 1) -> win1 \
//                               zip -> tcs (filter) -> sink (chain.dump)
//   ptmp send (link 2) -> win2 /
//
// Each window re-bins its link's TrigPrims into 1 ms windows (50000 ticks
// of PTMP's 50 MHz clock); the zipper merges the two streams in tstart
// order; the filter runs an engine on each set ("pass" here; "adjacency"
// finds clusters of adjacent channels); the sink writes a dump file.
//
// Feed it and watch it, in one shell (from the repository):
//
//   ptmp run examples/chain.jsonnet & run=$!; sleep 0.5
//   ptmp send -n 3000 -p PUSH -a connect -e tcp://127.0.0.1:17311 --detid 1 --ntps 4 --clock 50 --rate 1000 & s1=$!
//   ptmp send -n 3000 -p PUSH -a connect -e tcp://127.0.0.1:17312 --detid 2 --ntps 4 --clock 50 --rate 1000
//   wait $s1; kill $run; wait $run
//   ptmp cat --ifile chain.dump | head
//
// `--clock 50` stamps each set's tstart with the wall clock in 50 MHz ticks
// and `--rate 1000` sends one set per millisecond on that clock, so the
// two senders' sets interleave in time as two detector links would.
// `kill` (SIGTERM; Ctrl-C when it runs in its own shell) stops the chain
// in order: the windows flush the last window they hold into the zipper,
// which then sends all in tstart order.
//
// What you should see: at the end `ptmp run` prints the agents' counters;
// the zipper's line reads `zip (zipper) in=6000 out=6000 tardy=0 ...`,
// and chain.dump holds 6000 sets, detids 1 and 2 alternating, tstarts
// never decreasing (`ptmp cat --ifile chain.dump` prints one line per set:
// count, detid, created, tstart...).
//
// Why stop it promptly: a window holds its link's latest window until it
// sees later data. When one link goes quiet while the chain keeps running
// (a ttl running out long after the senders ended, say), the zipper sends
// the other link's sets after sync_time, and the quiet link's last window,
// flushed at the stop, comes too late: the zipper counts it tardy.
local ptmp = import 'ptmp.libsonnet';
// Top-level arguments (`ptmp run examples/chain.jsonnet --tla-str engine=adjacency
// --tla-code sync_time=2000`):
// - engine: what the filter runs on each set ("pass", or "adjacency", which
//   finds clusters of adjacent channels);
// - sync_time: how long the zipper holds a set waiting for the other link,
//   in ms. It must exceed the worst delay of a link (here a process on a
//   busy machine), or late sets are counted tardy and dropped; it is also
//   the latency added when a link goes quiet.
// - tspan: the windows' width in ticks (50000: 1 ms of the 50 MHz clock).
function(engine='pass', sync_time=1000, tspan=50000)
local link(n) = 'tcp://127.0.0.1:%d' % (17310 + n);
local win(n) = 'inproc://chain-win%d' % n;
ptmp.ptmper([
  ptmp.window('win1', ptmp.pull_bind(link(1)), ptmp.push_bind(win(1)), tspan=tspan),
  ptmp.window('win2', ptmp.pull_bind(link(2)), ptmp.push_bind(win(2)), tspan=tspan),
  ptmp.zipper('zip', ptmp.pull([win(1), win(2)]), ptmp.push_bind('inproc://chain-zip'), sync_time=sync_time),
  // keep_detid: the links keep their own detids through the filter (PTMP
  // would stamp every output with the first link's).
  ptmp.filter('tcs', ptmp.pull('inproc://chain-zip'), ptmp.push_bind('inproc://chain-tcs'), engine, {keep_detid: true}),
  ptmp.czmqat('sink', input=ptmp.pull('inproc://chain-tcs'), ofile='chain.dump'),
])
