import { useOrdersApp } from '../orders/orders-api.js';

describe('OpenAPI', () => {
  const ctx = useOrdersApp();

  it('describes the orders API at /docs-json: routes, bodies, errors and examples', async () => {
    const { body: doc } = await ctx.api.http().get('/docs-json').expect(200);
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/orders',
        '/orders/{id}',
        '/orders/{id}/history',
        '/orders/{id}/pay',
        '/orders/{id}/cancel',
        '/orders/{id}/finish',
        '/orders/{id}/review',
        '/orders/{id}/refund',
        '/health/live',
        '/health/ready',
      ]),
    );
    expect(doc.paths['/metrics']).toBeUndefined();

    const create = doc.paths['/orders'].post;
    expect(create.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/CreateOrderDto',
    );
    expect(Object.keys(create.responses)).toEqual(
      expect.arrayContaining(['201', '400', '401', '403', '409', '503']),
    );
    expect(create.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header' })]),
    );
    const pay = doc.paths['/orders/{id}/pay'].post;
    expect(Object.keys(pay.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '404', '409']),
    );
    // Every orders route takes a user's bearer JWT; the scheme says so.
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      if (!path.startsWith('/orders')) continue;
      for (const operation of Object.values<any>(operations))
        expect(operation.security).toEqual([{ user: [] }]);
    }
    expect(doc.components.securitySchemes.user).toMatchObject({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });

    const { CreateOrderDto, ReviewOrderDto, OrderSchema, ErrorSchema } = doc.components.schemas;
    // userId defaults to the token's user.
    expect(CreateOrderDto.required).toEqual(['amountCents']);
    expect(CreateOrderDto.properties.amountCents).toMatchObject({
      type: 'integer',
      minimum: 1,
      example: 1999,
    });
    expect(ReviewOrderDto.properties.stars).toMatchObject({ minimum: 1, maximum: 5 });
    expect(OrderSchema.properties.status.enum).toEqual([
      'PENDING_PAYMENT',
      'PAID',
      'FINISHED',
      'CLOSED',
      'REFUNDED',
    ]);
    // Each order links to its history and, with the admin API on, to its timeline.
    expect(OrderSchema.required).toContain('links');
    expect(OrderSchema.properties.links.$ref).toBe('#/components/schemas/OrderLinksSchema');
    const { OrderLinksSchema } = doc.components.schemas;
    expect(OrderLinksSchema.required).toEqual(['history', 'timeline', 'timelinePage']);
    expect(OrderLinksSchema.properties.timeline).toMatchObject({
      type: 'string',
      nullable: true,
      example: expect.stringMatching(/^\/admin\/api\/entities\/order:[0-9a-f-]{36}\/timeline$/),
    });
    expect(OrderLinksSchema.properties.timelinePage.example).toMatch(
      /^\/admin#\/timeline\?entity=order:[0-9a-f-]{36}$/,
    );
    expect(ErrorSchema.properties.message.example).toMatch(
      /only a PENDING_PAYMENT order can be paid/,
    );
    const list = doc.paths['/orders'].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['status', 'userId', 'limit', 'cursor']),
    );
  });

  it('serves the UI at /docs', async () => {
    const res = await ctx.api.http().get('/docs').expect(200);
    expect(res.text).toContain('swagger-ui');
  });
});
