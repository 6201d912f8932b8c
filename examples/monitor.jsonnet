// A monitor tap: sets pass through unchanged, and each one leaves a row in
// a text file, as PTMP's monitor writes them:
//
//   ptmp send -> tap 1 -> ptmp recv
//                  |
//              monitor.txt: tapid now nrecv nrecvtot count detid created tstart tspan ntps
//
// Feed it and watch it (three shells, or one with `&`):
//
//   ptmp run examples/monitor.jsonnet --ttl 6
//   ptmp recv -n 1000 -p PULL -a connect -e tcp://127.0.0.1:17322 -T 5000 --json
//   ptmp send -n 1000 -p PUSH -a connect -e tcp://127.0.0.1:17321 --detid 7 --ntps 2 --clock 50 --rate 500
//   tail -n 3 monitor.txt
//
// What you should see: `ptmp recv` ends with a JSON line holding
// "received":1000 and "gaps":0; monitor.txt has 1000 rows, one per set,
// starting with the tap id 1; the last one reads like
//   1 1795439313456143 1000 1000 999 7 1795439313456013 89771965672800000 25 2
// (tapid, receive time in us, this tap's count from 1, all taps' count,
// the set's count, detid, created, tstart, tspan, number of TrigPrims);
// the file is complete once `ptmp run` ends with
// `mon (monitor) tap1=1000 total=1000 ...`.
local ptmp = import 'ptmp.libsonnet';
ptmp.ptmper([
  ptmp.monitor('mon', 'monitor.txt', [
    ptmp.tap(1, 'link7', ptmp.pull_bind('tcp://127.0.0.1:17321'), ptmp.push_bind('tcp://127.0.0.1:17322')),
  ]),
])
