import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { useAdminTestApp } from './admin-test-app.js';

// What /docs will show of the admin API once the app serves its OpenAPI
// document: the routes, their bearer scheme ('admin') and response shapes.
describe('the admin API in the OpenAPI document', () => {
  const ctx = useAdminTestApp();
  let doc: OpenAPIObject;

  beforeAll(() => {
    const config = new DocumentBuilder().addBearerAuth(undefined, 'admin').build();
    doc = SwaggerModule.createDocument(ctx.t.app, config);
  });

  it('describes every admin route, each behind the admin bearer token', () => {
    const admin = Object.entries(doc.paths).filter(([path]) => path.startsWith('/admin/api'));
    expect(admin.map(([path]) => path).sort()).toEqual([
      '/admin/api/counts',
      '/admin/api/entities/{entity}/cancel',
      '/admin/api/entities/{entity}/reschedule',
      '/admin/api/entities/{entity}/timeline',
      '/admin/api/instances',
      '/admin/api/schedules',
      '/admin/api/schedules/{name}/pause',
      '/admin/api/schedules/{name}/resume',
      '/admin/api/stream',
      '/admin/api/tasks',
      '/admin/api/tasks/retry-dead',
      '/admin/api/tasks/{id}',
      '/admin/api/tasks/{id}/cancel',
      '/admin/api/tasks/{id}/reschedule',
      '/admin/api/tasks/{id}/retry',
      '/admin/api/tasks/{id}/run-now',
      '/admin/api/types',
      '/admin/api/types/{type}/limit',
      '/admin/api/types/{type}/pause',
      '/admin/api/types/{type}/resume',
      '/admin/api/wheel',
    ]);
    for (const [, item] of admin) {
      for (const operation of Object.values(item).filter((op) => op?.responses)) {
        expect(operation.security).toEqual([{ admin: [] }]);
        expect(operation.responses['401']).toBeDefined();
      }
    }
  });

  it('documents the listing filters and the shapes a page reads', () => {
    const list = doc.paths['/admin/api/tasks'].get!;
    expect(list.parameters?.map((p) => ('name' in p ? p.name : '')).sort()).toEqual(
      [
        'cursor',
        'dueBefore',
        'dueFrom',
        'entity',
        'key',
        'keyPrefix',
        'limit',
        'state',
        'type',
      ].sort(),
    );
    const schemas = doc.components?.schemas ?? {};
    for (const name of [
      'TaskPageView',
      'TaskView',
      'TaskDetailsView',
      'CountsView',
      'StateCountView',
      'InstanceView',
      'WheelView',
      'RetryDeadDto',
      'RescheduleTaskDto',
      'ScheduleView',
      'ScheduleRuleView',
      'LastOccurrenceView',
      'TypeLimitView',
      'LimitView',
      'RateLimitView',
      'SetTypeLimitDto',
      'RateLimitDto',
    ]) {
      expect(schemas[name]).toBeDefined();
    }
    expect(doc.paths['/admin/api/tasks/{id}/cancel'].post!.responses['409']).toBeDefined();
    expect(doc.paths['/admin/api/schedules/{name}/pause'].post!.responses['404']).toBeDefined();
    const limit = doc.paths['/admin/api/types/{type}/limit'];
    for (const operation of [limit.put!, limit.delete!]) {
      expect(operation.responses['400']).toBeDefined();
      expect(operation.responses['404']).toBeDefined();
    }
    expect(doc.paths['/admin/api/types/{type}/pause'].post!.responses['404']).toBeDefined();
    expect(doc.paths['/admin/api/types/{type}/resume'].post!.responses['404']).toBeDefined();
  });
});
