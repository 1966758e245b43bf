#!/usr/bin/env node
// The built CLI (dist/, made by `npm run build`); this file exists before the build so npm can link it.
import "../dist/cli.js";
