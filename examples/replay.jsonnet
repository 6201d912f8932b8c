// A file replay: read a dump file and send its sets on at the pace of
// their tstarts (PTMP's TPReplay, 50 ticks per microsecond), with
// `created` set to the time each one leaves:
//
//   replay-in.dump -> file (czmqat) -> replay -> tcp://127.0.0.1:17331 -> ptmp recv
//
// Make a dump of 2 s of data on the 50 MHz clock, then replay it and
// watch it (run the first two lines together, then the last two):
//
//   ptmp cat --isock PULL,bind,tcp://127.0.0.1:17330 --ofile replay-in.dump -n 500 -T 10000
//   ptmp send -n 500 -p PUSH -a connect -e tcp://127.0.0.1:17330 --ntps 4 --clock 50 --rate 250
//
//   ptmp run examples/replay.jsonnet --ttl 8
//   ptmp recv -n 500 -p PULL -a connect -e tcp://127.0.0.1:17331 -T 5000 --json
//
// What you should see: `ptmp recv` ends with a JSON line holding
// "received":500, "gaps":0 and an elapsed_s near 2 (the data's own 2 s:
// sets 4 ms apart in tstart come out about 4 ms apart); `ptmp run` prints
// `file (czmqat) copied=500 ...` and `replay (replay) in=500 out=500 ...`.
local ptmp = import 'ptmp.libsonnet';
ptmp.ptmper([
  ptmp.czmqat('file', ifile='replay-in.dump', output=ptmp.push_bind('inproc://replay-in')),
  ptmp.replay('replay', ptmp.pull('inproc://replay-in'), ptmp.push_bind('tcp://127.0.0.1:17331'), speed=50),
])
