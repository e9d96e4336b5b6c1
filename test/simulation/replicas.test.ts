/** The budget simulation (property.ts, scenario.ts): the 'replicas' family of schedules. */

import { simulate } from './property.js';

simulate('replicas');
