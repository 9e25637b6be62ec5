#!/usr/bin/env node
// The `mediagen` command. A checked-in shim so npm can link the bin before the package is built.
import { main } from '../dist/cli.js';

process.exitCode = await main();
