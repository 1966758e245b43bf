#!/usr/bin/env node
// The built stdio server (dist/, made by `npm run build`); this file exists before the build so npm can link it.
import "../dist/stdio.js";
