#!/usr/bin/python
import sys, json, shlex
args = dict(a.split('=', 1) for a in shlex.split(open(sys.argv[1]).read()))
print(json.dumps({"changed": False, "got": args.get("word"), "n": len(args)}))
