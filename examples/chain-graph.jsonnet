// The trigger chain of chain.jsonnet as a ptmp graph: the same windows,
// zipper and filter, fed by two built-in sources instead of two
// `ptmp send` processes, and ending in a counting sink:
//
//   link1 (source, detid 1) -> win1 (window) \
//                                              zip (zipper) -> tcs (filter) -> sink
//   link2 (source, detid 2) -> win2 (window) /
//
// Each source sends `n` sets at `rate` per second, each set's tstart the
// wall clock in 50 MHz ticks (as `ptmp send --clock 50`); each window
// re-bins its link into 1 ms windows (50000 ticks); the zipper merges the
// two links in tstart order; the filter runs the "pass" engine; the sink
// counts what arrives and writes it to chain-graph.dump in the graph's run
// directory (`{run_dir}/` names it), not where you started. By default every
// node runs in its own process and the runner picks the transports (shm
// between processes on one host, ipc into the zipper's fan-in).
//
// Check it, draw it, run it (from the repository):
//
//   ptmp graph check examples/chain-graph.jsonnet
//   ptmp graph dot examples/chain-graph.jsonnet | dot -Tsvg > chain.svg
//   ptmp graph run examples/chain-graph.jsonnet --ttl 5s
//   ptmp cat --ifile RUN_DIR/chain-graph.dump | head
//
// where RUN_DIR is the run directory `graph check` names and the run's
// last line repeats ("graph chain-graph: wrote RUN_DIR/chain-graph.dump").
//
// What you should see: the sources end after n sets each, and with them
// the run (a graph ends when every node that ends by itself has ended;
// --ttl is only a bound): each stage is stopped upstream first and
// flushes what it holds. The windows' lines read `tps_in=4000
// tps_out=4000 tardy_tps=0`, the zipper's `tardy=0`, and the sink
// receives every window the zipper sent (a little under 2 * n: a 1 ms
// window can hold two sets). chain-graph.dump holds those windows, all
// 8000 TrigPrims (4 per set), in tstart order, detids 1 and 2
// interleaved. `--tla-str placement=thread` runs every node in one
// process (inproc edges).
function(n=1000, rate=1000, sync_time=1000, placement='process', name='chain-graph')
  local src(i) = { name: 'link%d' % i, type: 'source', data: { count: n, rate: rate, tps: 4, detid: i } };
  local win(i) = { name: 'win%d' % i, type: 'window', data: { tspan: 50000 } };
  local all = ['link1', 'link2', 'win1', 'win2', 'zip', 'tcs', 'sink'];
  {
    name: name,
    nodes: [src(1), src(2), win(1), win(2),
            { name: 'zip', type: 'zipper', data: { sync_time: sync_time } },
            // keep_detid: the links keep their own detids through the filter.
            { name: 'tcs', type: 'filter', data: { engine: 'pass', keep_detid: true } },
            { name: 'sink', type: 'sink', data: { ofile: '{run_dir}/chain-graph.dump' } }],
    edges: [
      { from: 'link1.out', to: 'win1.in', pattern: 'pushpull' },
      { from: 'link2.out', to: 'win2.in', pattern: 'pushpull' },
      { from: ['win1.out', 'win2.out'], to: 'zip.in', pattern: 'pushpull' },
      { from: 'zip.out', to: 'tcs.in', pattern: 'pushpull' },
      { from: 'tcs.out', to: 'sink.in', pattern: 'pushpull' },
    ],
    processes: if placement == 'thread' then [{ name: 'all', nodes: all }] else [],
  }
