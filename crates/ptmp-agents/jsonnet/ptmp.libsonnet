// ptmp.libsonnet: helpers for writing ptmp run (ptmper) configurations.
//
//   local ptmp = import "ptmp.libsonnet";
//   ptmp.ptmper([
//     ptmp.zipper("zip", ptmp.pull(["tcp://127.0.0.1:7001", "tcp://127.0.0.1:7002"]),
//                 ptmp.push_bind("tcp://127.0.0.1:7100"), sync_time=10),
//   ], ttl=60)
//
// Every function returns plain JSON with PTMP's keys, so the output also
// runs under the C++ ptmper.
{
  // A socket config: attach is "bind" or "connect".
  socket(type, attach, endpoints, hwm=1000)::
    { socket: { type: type, hwm: hwm } + { [attach]: if std.isArray(endpoints) then endpoints else [endpoints] } },

  push_bind(eps, hwm=1000):: $.socket("PUSH", "bind", eps, hwm),
  push(eps, hwm=1000):: $.socket("PUSH", "connect", eps, hwm),
  pull_bind(eps, hwm=1000):: $.socket("PULL", "bind", eps, hwm),
  pull(eps, hwm=1000):: $.socket("PULL", "connect", eps, hwm),
  pub_bind(eps, hwm=1000):: $.socket("PUB", "bind", eps, hwm),
  sub(eps, hwm=1000):: $.socket("SUB", "connect", eps, hwm),

  // One entry of "proxies".
  proxy(type, name, data):: { type: type, name: name, data: { name: name } + data },

  zipper(name, input, output, sync_time=10, tardy_policy="drop")::
    $.proxy("zipper", name, { input: input, output: output, sync_time: sync_time, tardy_policy: tardy_policy }),

  sorted(name, input, output, tardy=10, tardy_policy="drop")::
    $.proxy("sorted", name, { input: input, output: output, tardy: tardy, tardy_policy: tardy_policy }),

  window(name, input, output, tspan, tbuf=0, toffset=0, detid=-1)::
    $.proxy("window", name, { input: input, output: output, tspan: tspan, tbuf: tbuf, toffset: toffset, detid: detid }),

  replay(name, input, output, speed=50, rewrite_count=0, rewrite_tstart=0)::
    $.proxy("replay", name, { input: input, output: output, speed: speed,
                              rewrite_count: rewrite_count, rewrite_tstart: rewrite_tstart }),

  // Schema-blind copy: give input or ifile, and output or ofile.
  czmqat(name, input=null, output=null, ifile=null, ofile=null, number=-1, delayus=0)::
    $.proxy("czmqat", name, std.prune({ input: input, output: output, ifile: ifile, ofile: ofile,
                                        number: number, delayus: delayus })),

  tap(id, name, input, output):: { id: id, name: name, input: input, output: output },
  monitor(name, filename, taps):: $.proxy("monitor", name, { filename: filename, taps: taps }),

  stats(name, input, output, topkey="tpsets", link_integration_time=1000,
        chan_integration_time=10000, tick_per_us=50)::
    $.proxy("stats", name, { input: input, output: output, topkey: topkey,
                             link_integration_time: link_integration_time,
                             chan_integration_time: chan_integration_time,
                             tick_per_us: tick_per_us }),

  filter(name, input, output, engine, extra={})::
    $.proxy("filter", name, { input: input, output: output, engine: engine } + extra),

  composer(name, proxies):: { type: "composer", name: name, data: { proxies: proxies } },

  // The top-level ptmper object.
  ptmper(proxies, ttl=-1, snooze=1000, pause=0, reprieve=0, plugins=[], verbose=0, name="ptmper")::
    { name: name, ttl: ttl, snooze: snooze, pause: pause, reprieve: reprieve,
      plugins: plugins, verbose: verbose, proxies: proxies },
}
