<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>AboutDialog</name>
    <message>
        <source>About TrainLab</source>
        <translation>关于 TrainLab</translation>
    </message>
    <message>
        <source>Version %s</source>
        <translation>版本 %s</translation>
    </message>
    <message>
        <source>Train and fine-tune image and text classifiers on your own GPU workstation, offline, without writing code.</source>
        <translation>在自己的 GPU 工作站上离线训练和微调图像与文本分类器，无需编写代码。</translation>
    </message>
    <message>
        <source>Licensed under the Apache License 2.0.</source>
        <translation>以 Apache License 2.0 许可发布。</translation>
    </message>
    <message>
        <source>Copy details</source>
        <translation>复制详细信息</translation>
    </message>
</context>
<context>
    <name>BoxedImageView</name>
    <message>
        <source>Cannot read {path}</source>
        <translation>无法读取 {path}</translation>
    </message>
</context>
<context>
    <name>CacheDialog</name>
    <message>
        <source>Caches</source>
        <translation>缓存</translation>
    </message>
    <message>
        <source>The least recently used entries are removed beyond this size; 0 keeps nothing</source>
        <translation>超过此大小时删除最久未用的条目；0 表示不保留</translation>
    </message>
    <message>
        <source>Size limit</source>
        <translation>大小上限</translation>
    </message>
    <message>
        <source>Clear caches</source>
        <translation>清空缓存</translation>
    </message>
    <message>
        <source>{name}: {entries} entries, {size}</source>
        <translation>{name}：{entries} 个条目，{size}</translation>
    </message>
    <message>
        <source>The caches are empty.</source>
        <translation>缓存为空。</translation>
    </message>
    <message>
        <source>Total {size} in {folder}</source>
        <translation>共 {size}，位于 {folder}</translation>
    </message>
</context>
<context>
    <name>ChatPanel</name>
    <message>
        <source>Compare with Base Model</source>
        <translation>与基础模型对比</translation>
    </message>
    <message>
        <source>Ask the model this run was fine-tuned from the same prompts, side by side</source>
        <translation>向此运行微调所基于的模型提出同样的问题，并排对照</translation>
    </message>
    <message>
        <source>Compare with…</source>
        <translation>与其他模型对比…</translation>
    </message>
    <message>
        <source>Ask another run or model folder the same prompts, side by side</source>
        <translation>向另一个运行或模型文件夹提出同样的问题，并排对照</translation>
    </message>
    <message>
        <source>Single Model</source>
        <translation>单个模型</translation>
    </message>
    <message>
        <source>System prompt (optional)</source>
        <translation>系统提示词（可选）</translation>
    </message>
    <message>
        <source>Sampling temperature; 0 always takes the likeliest token</source>
        <translation>采样温度；为 0 时总是取可能性最大的词元</translation>
    </message>
    <message>
        <source>Nucleus sampling: sample among the likeliest tokens that make up this share (temperature above 0)</source>
        <translation>核采样：只在累计概率达到此比例的最可能词元中采样（温度大于 0 时）</translation>
    </message>
    <message>
        <source>Longest answer, in tokens</source>
        <translation>回答的最大长度（词元数）</translation>
    </message>
    <message>
        <source>System:</source>
        <translation>系统：</translation>
    </message>
    <message>
        <source>Temperature:</source>
        <translation>温度：</translation>
    </message>
    <message>
        <source>Top-p:</source>
        <translation>Top-p：</translation>
    </message>
    <message>
        <source>Max new tokens:</source>
        <translation>最大新词元数：</translation>
    </message>
    <message>
        <source>Type a message (Ctrl+Enter sends)</source>
        <translation>输入消息（Ctrl+Enter 发送）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>End the answer now</source>
        <translation>立即结束回答</translation>
    </message>
    <message>
        <source>Clear Conversation</source>
        <translation>清空对话</translation>
    </message>
    <message>
        <source>Choose a Run or Model Folder to Compare With</source>
        <translation>选择用于对比的运行或模型文件夹</translation>
    </message>
    <message>
        <source>Checking the memory both models need…</source>
        <translation>正在估算两个模型所需的内存…</translation>
    </message>
    <message>
        <source>Both models answer at once, side by side (about {need} of weights; {free} free).</source>
        <translation>两个模型同时并排回答（权重约 {need}；可用 {free}）。</translation>
    </message>
    <message>
        <source>Both models do not fit in memory together (about {need} of weights; {free} free): they answer one after the other.</source>
        <translation>内存放不下两个模型（权重约 {need}；可用 {free}）：它们将依次回答。</translation>
    </message>
    <message>
        <source>Cannot estimate the memory of both models ({error}): they answer one after the other.</source>
        <translation>无法估算两个模型所需的内存（{error}）：它们将依次回答。</translation>
    </message>
    <message>
        <source>Base model: {name}</source>
        <translation>基础模型：{name}</translation>
    </message>
    <message>
        <source>The models answer one after the other: both do not fit in memory together.</source>
        <translation>两个模型依次回答：内存放不下两个模型。</translation>
    </message>
    <message>
        <source>Answering…</source>
        <translation>正在回答…</translation>
    </message>
    <message>
        <source>{name} (loading…)</source>
        <translation>{name}（加载中…）</translation>
    </message>
    <message>
        <source>The model could not answer: {error}</source>
        <translation>模型无法回答：{error}</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>已停止。</translation>
    </message>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>This model names no base model folder on this computer; use Compare with…</source>
        <translation>此模型没有指明本机上的基础模型文件夹；请使用“与其他模型对比…”</translation>
    </message>
</context>
<context>
    <name>ClassificationPage</name>
    <message>
        <source>Class</source>
        <translation>类别</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精确率</translation>
    </message>
    <message>
        <source>Recall</source>
        <translation>召回率</translation>
    </message>
    <message>
        <source>F1</source>
        <translation>F1</translation>
    </message>
    <message>
        <source>Support</source>
        <translation>样本数</translation>
    </message>
    <message>
        <source>Click a cell of the confusion matrix to see its examples.</source>
        <translation>点击混淆矩阵中的单元格即可查看对应的样本。</translation>
    </message>
    <message>
        <source>Confidence</source>
        <translation>置信度</translation>
    </message>
    <message>
        <source>Predicted</source>
        <translation>预测</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>Metrics</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Per class</source>
        <translation>各类别</translation>
    </message>
    <message>
        <source>Confusion matrix</source>
        <translation>混淆矩阵</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>Misclassified</source>
        <translation>分类错误</translation>
    </message>
    <message>
        <source>Classes</source>
        <translation>类别数</translation>
    </message>
    <message>
        <source>“{true}” predicted correctly: 1 example</source>
        <translation>“{true}”预测正确：1 个样本</translation>
    </message>
    <message>
        <source>“{true}” predicted correctly: {count} examples</source>
        <translation>“{true}”预测正确：{count} 个样本</translation>
    </message>
    <message>
        <source>“{true}” predicted as “{predicted}”: 1 example</source>
        <translation>“{true}”被预测为“{predicted}”：1 个样本</translation>
    </message>
    <message>
        <source>“{true}” predicted as “{predicted}”: {count} examples</source>
        <translation>“{true}”被预测为“{predicted}”：{count} 个样本</translation>
    </message>
    <message>
        <source>this evaluation does not list correctly predicted examples.</source>
        <translation>此评估未列出预测正确的样本。</translation>
    </message>
    <message>
        <source>this evaluation does not list them.</source>
        <translation>此评估未列出这些样本。</translation>
    </message>
    <message>
        <source>the {shown} most confident are shown.</source>
        <translation>显示置信度最高的 {shown} 个。</translation>
    </message>
    <message>
        <source>most confident first.</source>
        <translation>按置信度从高到低排列。</translation>
    </message>
    <message>
        <source>{path}
true: {true}, predicted: {predicted} ({confidence:.1%})</source>
        <translation>{path}
真实：{true}，预测：{predicted}（{confidence:.1%}）</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Show in Folder</source>
        <translation>在文件夹中显示</translation>
    </message>
</context>
<context>
    <name>ConfusionMatrixModel</name>
    <message>
        <source>{count} of {total} “{true}” examples predicted correctly ({share:.1%})</source>
        <translation>{total} 个“{true}”样本中有 {count} 个预测正确（{share:.1%}）</translation>
    </message>
    <message>
        <source>{count} of {total} “{true}” examples predicted as “{predicted}” ({share:.1%})</source>
        <translation>{total} 个“{true}”样本中有 {count} 个被预测为“{predicted}”（{share:.1%}）</translation>
    </message>
    <message>
        <source>True label: {label} ({count} examples)</source>
        <translation>真实标签：{label}（{count} 个样本）</translation>
    </message>
    <message>
        <source>Predicted label: {label}</source>
        <translation>预测标签：{label}</translation>
    </message>
</context>
<context>
    <name>ConfusionMatrixView</name>
    <message>
        <source>Predicted label →</source>
        <translation>预测标签 →</translation>
    </message>
    <message>
        <source>← True label</source>
        <translation>← 真实标签</translation>
    </message>
    <message>
        <source>Counts</source>
        <translation>计数</translation>
    </message>
    <message>
        <source>% of true label</source>
        <translation>占真实标签的百分比</translation>
    </message>
    <message>
        <source>Each row divided by the number of examples of its true label (recall on the diagonal)</source>
        <translation>每一行除以该真实标签的样本数（对角线即召回率）</translation>
    </message>
    <message>
        <source>No confusion matrix in this evaluation.</source>
        <translation>此评估中没有混淆矩阵。</translation>
    </message>
</context>
<context>
    <name>DataPanel</name>
    <message>
        <source>Drop a folder or file here, or choose one</source>
        <translation>将文件夹或文件拖放到这里，或点击选择</translation>
    </message>
    <message>
        <source>Folder…</source>
        <translation>文件夹…</translation>
    </message>
    <message>
        <source>Choose a folder of class folders or of split files</source>
        <translation>选择包含各类别子文件夹或各数据划分文件的文件夹</translation>
    </message>
    <message>
        <source>File…</source>
        <translation>文件…</translation>
    </message>
    <message>
        <source>Choose a CSV, TSV or JSON-lines file</source>
        <translation>选择 CSV、TSV 或 JSON Lines 文件</translation>
    </message>
    <message>
        <source>Check again</source>
        <translation>重新检查</translation>
    </message>
    <message>
        <source>Read the data again (after you changed files)</source>
        <translation>重新读取数据（在修改文件之后）</translation>
    </message>
    <message>
        <source>Choose the data folder</source>
        <translation>选择数据文件夹</translation>
    </message>
    <message>
        <source>Choose the data file</source>
        <translation>选择数据文件</translation>
    </message>
    <message>
        <source>Data files (*.csv *.tsv *.jsonl *.json *.txt);;All files (*)</source>
        <translation>数据文件 (*.csv *.tsv *.jsonl *.json *.txt);;所有文件 (*)</translation>
    </message>
    <message>
        <source>%s does not exist.</source>
        <translation>%s 不存在。</translation>
    </message>
    <message>
        <source>Checking the data…</source>
        <translation>正在检查数据…</translation>
    </message>
    <message>
        <source>This data cannot be used: %s</source>
        <translation>无法使用此数据：%s</translation>
    </message>
    <message numerus="yes">
        <source>%n class(es)</source>
        <translation>
            <numerusform>%n 个类别</numerusform>
        </translation>
    </message>
    <message>
        <source>Ready to train: %s</source>
        <translation>可以开始训练：%s</translation>
    </message>
    <message>
        <source>Class</source>
        <translation>类别</translation>
    </message>
    <message numerus="yes">
        <source>Skipped %n file(s) or row(s)</source>
        <translation>
            <numerusform>跳过了 %n 个文件或行</numerusform>
        </translation>
    </message>
    <message>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Validation</source>
        <translation>验证</translation>
    </message>
    <message>
        <source>Test</source>
        <translation>测试</translation>
    </message>
    <message numerus="yes">
        <source>… and %n more class(es)</source>
        <translation>
            <numerusform>… 以及另外 %n 个类别</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n label(s)</source>
        <translation>
            <numerusform>%n 个标签</numerusform>
        </translation>
    </message>
    <message>
        <source>Label</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>目标</translation>
    </message>
    <message>
        <source>examples</source>
        <translation>个样本</translation>
    </message>
</context>
<context>
    <name>DetailBlock</name>
    <message>
        <source>{title} (the worst {shown} of {total})</source>
        <translation>{title}（{total} 个中最差的 {shown} 个）</translation>
    </message>
    <message>
        <source>This TrainLab cannot draw a detail of this kind; eval.json holds it.</source>
        <translation>此版本的 TrainLab 无法绘制这类详情；它保存在 eval.json 中。</translation>
    </message>
</context>
<context>
    <name>EstimateView</name>
    <message>
        <source>Estimate</source>
        <translation>估算</translation>
    </message>
    <message>
        <source>Estimate the memory this run needs: the weights, gradients and optimizer states are counted, the activations measured in two training steps in another process</source>
        <translation>估算本次运行所需内存：统计权重、梯度和优化器状态，并在另一个进程中通过两个训练步测量激活值</translation>
    </message>
    <message>
        <source>Memory: not estimated for these settings yet</source>
        <translation>内存：尚未针对这些设置进行估算</translation>
    </message>
    <message>
        <source>Memory: estimating…</source>
        <translation>内存：正在估算…</translation>
    </message>
    <message>
        <source>No estimate</source>
        <translation>无估算</translation>
    </message>
    <message>
        <source>%s (for other settings: estimate again)</source>
        <translation>%s（针对其他设置：请重新估算）</translation>
    </message>
    <message>
        <source>No estimate: %s</source>
        <translation>无估算：%s</translation>
    </message>
    <message>
        <source>Memory: %s</source>
        <translation>内存：%s</translation>
    </message>
    <message>
        <source>GPU memory</source>
        <translation>GPU 显存</translation>
    </message>
    <message>
        <source>free RAM</source>
        <translation>可用内存</translation>
    </message>
    <message>
        <source>weights, gradients and optimizer need about %1 of your %2 %3; activations not measured</source>
        <translation>权重、梯度和优化器约需 %1（共 %2 %3）；未测量激活值</translation>
    </message>
    <message>
        <source>needs about %1 of your %2 %3</source>
        <translation>约需 %1（共 %2 %3）</translation>
    </message>
    <message>
        <source>CUDA context</source>
        <translation>CUDA 上下文</translation>
    </message>
    <message>
        <source>the process before the model</source>
        <translation>加载模型前的进程</translation>
    </message>
    <message>
        <source>weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <source>gradients</source>
        <translation>梯度</translation>
    </message>
    <message>
        <source>optimizer states</source>
        <translation>优化器状态</translation>
    </message>
    <message>
        <source>activations (micro-batch of %s)</source>
        <translation>激活值（微批次 %s）</translation>
    </message>
    <message>
        <source>total: %1 of %2 on %3 (10% kept free)</source>
        <translation>合计：%1，%3 上可用 %2（保留 10% 空闲）</translation>
    </message>
    <message>
        <source>parameters: %1, trainable: %2</source>
        <translation>参数：%1，可训练：%2</translation>
    </message>
    <message>
        <source>activations from a two-step probe (%1)%2</source>
        <translation>激活值来自两步探测（%1）%2</translation>
    </message>
    <message>
        <source>, cached</source>
        <translation>，已缓存</translation>
    </message>
    <message>
        <source>Does not fit: this run needs about %1, more than the %2 it can use on %3 (10% kept free).</source>
        <translation>放不下：本次运行约需 %1，超过 %3 上可用的 %2（保留 10% 空闲）。</translation>
    </message>
    <message>
        <source>Does not fit: this run needs about %1, more than the %2 of free RAM it can use (10% kept free).</source>
        <translation>放不下：本次运行约需 %1，超过可用内存 %2（保留 10% 空闲）。</translation>
    </message>
    <message>
        <source>You can still start it: if memory runs out, the run splits its batches and retries.</source>
        <translation>仍可开始运行：如果内存不足，运行会拆分批次并重试。</translation>
    </message>
    <message>
        <source>What helps:</source>
        <translation>可行的办法：</translation>
    </message>
    <message>
        <source>Micro-batches that fit</source>
        <translation>可容纳的微批次</translation>
    </message>
    <message>
        <source>micro_batch_size=auto: the largest micro-batch that fits; batch_size stays the effective batch</source>
        <translation>micro_batch_size=auto：使用可容纳的最大微批次；batch_size 仍为有效批次</translation>
    </message>
    <message>
        <source>Gradient checkpointing</source>
        <translation>梯度检查点</translation>
    </message>
    <message>
        <source>gradient_checkpointing=on: recompute activations in the backward pass (about a third slower)</source>
        <translation>gradient_checkpointing=on：在反向传播中重新计算激活值（约慢三分之一）</translation>
    </message>
    <message>
        <source>LoRA adapters</source>
        <translation>LoRA 适配器</translation>
    </message>
    <message>
        <source>finetune=lora: train small adapters and the head, not every weight</source>
        <translation>finetune=lora：只训练小型适配器和输出头，而不是全部权重</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>Writes about %1: merged model + adapters</source>
        <translation>约写入 %1：合并后的模型 + 适配器</translation>
    </message>
    <message>
        <source>Writes about %1: adapters only; model/ names the base model</source>
        <translation>约写入 %1：仅适配器；model/ 记录基础模型</translation>
    </message>
    <message>
        <source>Writes the adapters only (their size comes with the estimate); model/ names the base model</source>
        <translation>仅写入适配器（其大小随估算给出）；model/ 记录基础模型</translation>
    </message>
    <message>
        <source>(%1 free in %2)</source>
        <translation>（%2 中可用 %1）</translation>
    </message>
    <message>
        <source>— not enough free space</source>
        <translation>— 可用空间不足</translation>
    </message>
    <message>
        <source>Checkpoints hold every weight, the base model&apos;s included, and take more space while the run lasts (keep_checkpoints=last halves it)</source>
        <translation>检查点包含全部权重（含基础模型），运行期间会占用更多空间（keep_checkpoints=last 可减半）</translation>
    </message>
</context>
<context>
    <name>FigureView</name>
    <message>
        <source>Cannot read {path}</source>
        <translation>无法读取 {path}</translation>
    </message>
</context>
<context>
    <name>GGUFExportButton</name>
    <message>
        <source>Export for llama.cpp / Ollama</source>
        <translation>导出到 llama.cpp / Ollama</translation>
    </message>
    <message>
        <source>Write model.gguf and an Ollama Modelfile beside the run&apos;s model</source>
        <translation>在运行的模型旁写出 model.gguf 和 Ollama 的 Modelfile</translation>
    </message>
    <message>
        <source>GGUF, 16-bit (as trained)</source>
        <translation>GGUF，16 位（与训练时相同）</translation>
    </message>
    <message>
        <source>GGUF, 8-bit q8_0 (half the size)</source>
        <translation>GGUF，8 位 q8_0（大小减半）</translation>
    </message>
    <message>
        <source>Writing model.gguf ({quant})…</source>
        <translation>正在写出 model.gguf（{quant}）…</translation>
    </message>
    <message>
        <source>Wrote {gguf} and its Modelfile: &apos;ollama create NAME -f Modelfile&apos; in {folder} adds it to Ollama.</source>
        <translation>已写出 {gguf} 及其 Modelfile：在 {folder} 中运行 &apos;ollama create NAME -f Modelfile&apos; 即可加入 Ollama。</translation>
    </message>
    <message>
        <source>The GGUF export failed: {message}</source>
        <translation>GGUF 导出失败：{message}</translation>
    </message>
</context>
<context>
    <name>GpuPanel</name>
    <message>
        <source>CPU / RAM</source>
        <translation>CPU / 内存</translation>
    </message>
    <message>
        <source>the NVIDIA driver is not installed (NVML library not found)</source>
        <translation>未安装 NVIDIA 驱动（找不到 NVML 库）</translation>
    </message>
    <message>
        <source>the NVIDIA driver is not loaded</source>
        <translation>NVIDIA 驱动未加载</translation>
    </message>
    <message>
        <source>no permission to query the NVIDIA driver</source>
        <translation>没有查询 NVIDIA 驱动的权限</translation>
    </message>
    <message>
        <source>the NVIDIA driver library and kernel module differ in version (reboot after the driver update)</source>
        <translation>NVIDIA 驱动库与内核模块版本不一致（更新驱动后请重启）</translation>
    </message>
    <message>
        <source>No NVIDIA GPU</source>
        <translation>未检测到 NVIDIA GPU</translation>
    </message>
    <message>
        <source>{reason} · CPU {cpu} · RAM {ram}</source>
        <translation>{reason} · CPU {cpu} · 内存 {ram}</translation>
    </message>
    <message>
        <source>{name}: lost</source>
        <translation>{name}：已丢失</translation>
    </message>
    <message>
        <source>CPU {cpu} · RAM {ram}</source>
        <translation>CPU {cpu} · 内存 {ram}</translation>
    </message>
    <message>
        <source>this process</source>
        <translation>本进程</translation>
    </message>
    <message>
        <source>Utilisation (%)</source>
        <translation>利用率 (%)</translation>
    </message>
    <message>
        <source>Memory (GB)</source>
        <translation>显存 (GB)</translation>
    </message>
    <message>
        <source>Temperature (°C)</source>
        <translation>温度 (°C)</translation>
    </message>
    <message>
        <source>Power (W)</source>
        <translation>功耗 (W)</translation>
    </message>
    <message>
        <source>CPU (%)</source>
        <translation>CPU (%)</translation>
    </message>
    <message>
        <source>RAM (GB)</source>
        <translation>内存 (GB)</translation>
    </message>
</context>
<context>
    <name>GpuPicker</name>
    <message numerus="yes">
        <source>All %n GPUs</source>
        <translation>
            <numerusform>全部 %n 个 GPU</numerusform>
        </translation>
    </message>
    <message>
        <source>One process per GPU, every GPU of this machine</source>
        <translation>每个 GPU 一个进程，使用本机所有 GPU</translation>
    </message>
    <message>
        <source>Check two or more to train on them together, one process per GPU (the effective batch grows with them).</source>
        <translation>勾选两个或更多以一起训练，每个 GPU 一个进程（有效批次随之增大）。</translation>
    </message>
    <message>
        <source>Several GPUs: one data-parallel run, one process per GPU (command line: --gpus 0,2).
One GPU: the same as choosing it as the device.</source>
        <translation>多个 GPU：一次数据并行运行，每个 GPU 一个进程（命令行：--gpus 0,2）。
一个 GPU：等同于将其选为设备。</translation>
    </message>
</context>
<context>
    <name>KeepAwake</name>
    <message>
        <source>A training run is in progress</source>
        <translation>正在进行训练</translation>
    </message>
</context>
<context>
    <name>LaunchPicker</name>
    <message>
        <source>GPUs:</source>
        <translation>GPU：</translation>
    </message>
    <message>
        <source>CPU processes:</source>
        <translation>CPU 进程：</translation>
    </message>
    <message>
        <source>Train on the CPU as one data-parallel run of this many processes (gloo), each with a share of the cores.
Usually slower than one process on a desktop; it can pay on a machine with many cores.
Command line: --nproc-per-node N --device cpu</source>
        <translation>在 CPU 上以这么多进程（gloo）进行一次数据并行训练，每个进程分得部分核心。
在台式机上通常比单进程慢；在多核机器上可能更快。
命令行：--nproc-per-node N --device cpu</translation>
    </message>
</context>
<context>
    <name>LaunchSummary</name>
    <message>
        <source>World size %1</source>
        <translation>进程总数 %1</translation>
    </message>
    <message>
        <source>%1 processes, one per GPU</source>
        <translation>%1 个进程，每个 GPU 一个</translation>
    </message>
    <message>
        <source>%1 CPU processes</source>
        <translation>%1 个 CPU 进程</translation>
    </message>
    <message>
        <source>effective batch %1</source>
        <translation>有效批次 %1</translation>
    </message>
    <message>
        <source>per GPU</source>
        <translation>每个 GPU</translation>
    </message>
    <message>
        <source>per process</source>
        <translation>每个进程</translation>
    </message>
    <message>
        <source>Effective batch: %1 %2 × %3 processes × %4 accumulation: the examples of one optimizer step.</source>
        <translation>有效批次：%1 %2 × %3 个进程 × %4 次累积：一次优化器步的样本数。</translation>
    </message>
    <message>
        <source>The batch size is per process, and the learning rate is not rescaled for you.</source>
        <translation>批次大小按进程计，学习率不会自动调整。</translation>
    </message>
</context>
<context>
    <name>LivePlots</name>
    <message>
        <source>Step</source>
        <translation>步数</translation>
    </message>
    <message>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>What the horizontal axis of the loss and learning-rate plots counts</source>
        <translation>损失和学习率曲线的横轴表示的量</translation>
    </message>
    <message>
        <source>Smoothing of the training loss (exponential moving average)</source>
        <translation>训练损失的平滑程度（指数移动平均）</translation>
    </message>
    <message>
        <source>Log scale</source>
        <translation>对数坐标</translation>
    </message>
    <message>
        <source>Show the training loss on a logarithmic scale</source>
        <translation>以对数坐标显示训练损失</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适应</translation>
    </message>
    <message>
        <source>Fit every plot to its data again</source>
        <translation>让每张图重新适应其数据范围</translation>
    </message>
    <message>
        <source>X axis:</source>
        <translation>横轴：</translation>
    </message>
    <message>
        <source>Smoothing:</source>
        <translation>平滑：</translation>
    </message>
    <message>
        <source>Training loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <source>Validation loss</source>
        <translation>验证损失</translation>
    </message>
    <message>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <source>best</source>
        <translation>最佳</translation>
    </message>
    <message>
        <source>last</source>
        <translation>最新</translation>
    </message>
    <message>
        <source>epoch</source>
        <translation>轮次</translation>
    </message>
    <message>
        <source>loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>smoothed</source>
        <translation>平滑后</translation>
    </message>
    <message>
        <source>learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <source>Validation loss: not measured</source>
        <translation>验证损失：未测量</translation>
    </message>
    <message>
        <source>time</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步数</translation>
    </message>
</context>
<context>
    <name>LogPanel</name>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>Everything</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Information</source>
        <translation>信息</translation>
    </message>
    <message>
        <source>Warnings and errors</source>
        <translation>警告和错误</translation>
    </message>
    <message>
        <source>Open log folder</source>
        <translation>打开日志文件夹</translation>
    </message>
    <message>
        <source>Clear</source>
        <translation>清空</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>The disk holding the run index is full: the runs are listed read-only from their folders.</source>
        <translation>存放运行索引的磁盘已满：运行记录从各自的文件夹中以只读方式列出。</translation>
    </message>
    <message>
        <source>Start</source>
        <translation>开始</translation>
    </message>
    <message>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Runs</source>
        <translation>运行记录</translation>
    </message>
    <message>
        <source>Results</source>
        <translation>结果</translation>
    </message>
    <message>
        <source>Try it</source>
        <translation>试用</translation>
    </message>
    <message>
        <source>Queue</source>
        <translation>队列</translation>
    </message>
    <message>
        <source>Loading…</source>
        <translation>正在加载…</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Some plugins failed to load: %s (Tools › Plugins)</source>
        <translation>部分插件加载失败：%s（工具 › 插件）</translation>
    </message>
    <message>
        <source>TrainLab is still starting.</source>
        <translation>TrainLab 仍在启动。</translation>
    </message>
    <message>
        <source>The run failed: %s</source>
        <translation>运行失败：%s</translation>
    </message>
    <message>
        <source>The queue is not available: %s</source>
        <translation>队列不可用：%s</translation>
    </message>
    <message>
        <source>Queued %1 (place %2 in line); see the Queue page.</source>
        <translation>已加入队列 %1（排第 %2 位）；见“队列”页面。</translation>
    </message>
    <message>
        <source>%s is not a TrainLab run folder (no run.json).</source>
        <translation>%s 不是 TrainLab 运行文件夹（缺少 run.json）。</translation>
    </message>
    <message>
        <source>Following %s as it runs</source>
        <translation>正在跟踪运行中的 %s</translation>
    </message>
    <message>
        <source>%d lines of metrics.jsonl in %s are not events and were skipped</source>
        <translation>metrics.jsonl 中有 %d 行不是事件，已跳过（%s）</translation>
    </message>
    <message>
        <source>Stopping the run before closing…</source>
        <translation>关闭前正在停止运行…</translation>
    </message>
</context>
<context>
    <name>MetricsPage</name>
    <message>
        <source>Metrics</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Every split</source>
        <translation>各数据划分</translation>
    </message>
    <message>
        <source>During training (validation)</source>
        <translation>训练过程中（验证集）</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>Metric</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>This run&apos;s metrics.jsonl holds no evaluation to draw.</source>
        <translation>此运行的 metrics.jsonl 中没有可绘制的评估。</translation>
    </message>
    <message>
        <source>{metric} (monitored)</source>
        <translation>{metric}（监控指标）</translation>
    </message>
    <message>
        <source>epoch</source>
        <translation>轮次</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步数</translation>
    </message>
</context>
<context>
    <name>MultiLabelPage</name>
    <message>
        <source>Label</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精确率</translation>
    </message>
    <message>
        <source>Recall</source>
        <translation>召回率</translation>
    </message>
    <message>
        <source>F1</source>
        <translation>F1</translation>
    </message>
    <message>
        <source>Support</source>
        <translation>样本数</translation>
    </message>
    <message>
        <source>Threshold</source>
        <translation>阈值</translation>
    </message>
    <message>
        <source>Only the examples this label is wrong on</source>
        <translation>只显示此标签出错的示例</translation>
    </message>
    <message>
        <source>Example</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>True</source>
        <translation>真实值</translation>
    </message>
    <message>
        <source>Predicted</source>
        <translation>预测</translation>
    </message>
    <message>
        <source>Missed / added</source>
        <translation>漏掉 / 多出</translation>
    </message>
    <message>
        <source>Top scores</source>
        <translation>最高得分</translation>
    </message>
    <message>
        <source>Metrics</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Per label</source>
        <translation>按标签</translation>
    </message>
    <message>
        <source>Examples with wrong labels</source>
        <translation>标签有误的示例</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>With wrong labels</source>
        <translation>标签有误</translation>
    </message>
    <message>
        <source>Labels</source>
        <translation>标签数</translation>
    </message>
    <message>
        <source>All labels</source>
        <translation>所有标签</translation>
    </message>
    <message>
        <source>missed: {missed}
added: {added}</source>
        <translation>漏掉：{missed}
多出：{added}</translation>
    </message>
    <message>
        <source>{count} examples where “{label}” is wrong, most wrong first.</source>
        <translation>“{label}” 出错的 {count} 个示例，错得最多的在前。</translation>
    </message>
    <message>
        <source>{count} examples whose predicted labels differ from the true ones, most wrong first.</source>
        <translation>预测标签与真实标签不同的 {count} 个示例，错得最多的在前。</translation>
    </message>
    <message>
        <source>No listed example has wrong labels.</source>
        <translation>列出的示例中没有标签出错的。</translation>
    </message>
</context>
<context>
    <name>ParamsForm</name>
    <message>
        <source>Show advanced settings</source>
        <translation>显示高级设置</translation>
    </message>
    <message>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <source>Set every parameter back to the task&apos;s defaults</source>
        <translation>将所有参数恢复为该任务的默认值</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>Training</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Hardware</source>
        <translation>硬件</translation>
    </message>
    <message>
        <source>Output</source>
        <translation>输出</translation>
    </message>
    <message>
        <source>Choices: %s</source>
        <translation>可选值：%s</translation>
    </message>
    <message>
        <source>Other values are accepted too.</source>
        <translation>也接受其他值。</translation>
    </message>
    <message>
        <source>Range: %s to %s</source>
        <translation>范围：%s 至 %s</translation>
    </message>
    <message>
        <source>At least %s</source>
        <translation>至少 %s</translation>
    </message>
    <message>
        <source>At most %s</source>
        <translation>至多 %s</translation>
    </message>
    <message>
        <source>Default: %s</source>
        <translation>默认值：%s</translation>
    </message>
    <message>
        <source>(none)</source>
        <translation>（无）</translation>
    </message>
    <message>
        <source>Command line: --set %s=VALUE</source>
        <translation>命令行：--set %s=值</translation>
    </message>
    <message>
        <source>Choose a folder</source>
        <translation>选择文件夹</translation>
    </message>
    <message>
        <source>The GPUs checked below are the devices of this run</source>
        <translation>下面勾选的 GPU 即本次运行的设备</translation>
    </message>
    <message>
        <source>A value is required.</source>
        <translation>此项必填。</translation>
    </message>
    <message>
        <source>Enter a whole number.</source>
        <translation>请输入整数。</translation>
    </message>
    <message>
        <source>Enter a number (for example 0.001 or 1e-3).</source>
        <translation>请输入数字（例如 0.001 或 1e-3）。</translation>
    </message>
    <message>
        <source>Enter a finite number.</source>
        <translation>请输入有限的数字。</translation>
    </message>
    <message>
        <source>Must be at least %s.</source>
        <translation>不能小于 %s。</translation>
    </message>
    <message>
        <source>Must be at most %s.</source>
        <translation>不能大于 %s。</translation>
    </message>
    <message>
        <source>Choose one of: %s.</source>
        <translation>请从以下选项中选择：%s。</translation>
    </message>
</context>
<context>
    <name>PluginsDialog</name>
    <message>
        <source>Plugins</source>
        <translation>插件</translation>
    </message>
    <message>
        <source>Safe mode is on (TRAINLAB_DISABLE_PLUGINS): only the built-in plugins were loaded.</source>
        <translation>安全模式已开启（TRAINLAB_DISABLE_PLUGINS）：只加载了内置插件。</translation>
    </message>
    <message>
        <source>Plugin</source>
        <translation>插件</translation>
    </message>
    <message>
        <source>Version</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Distribution</source>
        <translation>发行包</translation>
    </message>
    <message>
        <source>Tasks</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Blocking and unblocking take effect the next time TrainLab starts.</source>
        <translation>屏蔽和取消屏蔽将在下次启动 TrainLab 时生效。</translation>
    </message>
    <message>
        <source>Block</source>
        <translation>屏蔽</translation>
    </message>
    <message>
        <source>A blocked plugin is not imported at the next start; its tasks disappear until unblocked.</source>
        <translation>被屏蔽的插件在下次启动时不会被导入；在取消屏蔽之前，它提供的任务不可用。</translation>
    </message>
    <message>
        <source>Copy Details</source>
        <translation>复制详细信息</translation>
    </message>
    <message>
        <source>Copy this plugin&apos;s status and traceback, for a bug report.</source>
        <translation>复制此插件的状态和回溯信息，用于报告问题。</translation>
    </message>
    <message>
        <source>Traceback</source>
        <translation>回溯信息</translation>
    </message>
    <message>
        <source>Loaded</source>
        <translation>已加载</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Incompatible</source>
        <translation>不兼容</translation>
    </message>
    <message>
        <source>Blocked</source>
        <translation>已屏蔽</translation>
    </message>
    <message>
        <source>Disabled (safe mode)</source>
        <translation>已禁用（安全模式）</translation>
    </message>
    <message>
        <source>{status}, blocked after restart</source>
        <translation>{status}，重启后屏蔽</translation>
    </message>
    <message>
        <source>{status}, unblocked after restart</source>
        <translation>{status}，重启后取消屏蔽</translation>
    </message>
    <message>
        <source>Loaded with warnings</source>
        <translation>已加载（有警告）</translation>
    </message>
    <message>
        <source> (built-in)</source>
        <translation>（内置）</translation>
    </message>
    <message>
        <source>{plugins} plugins found, offering {tasks} tasks.</source>
        <translation>找到 {plugins} 个插件，共提供 {tasks} 个任务。</translation>
    </message>
    <message>
        <source>{count} could not be loaded; select one to see why.</source>
        <translation>其中 {count} 个无法加载；选中即可查看原因。</translation>
    </message>
    <message>
        <source>No plugins found</source>
        <translation>未找到插件</translation>
    </message>
    <message>
        <source>Entry point</source>
        <translation>入口点</translation>
    </message>
    <message>
        <source>Plugin API</source>
        <translation>插件 API</translation>
    </message>
    <message>
        <source>Unblock</source>
        <translation>取消屏蔽</translation>
    </message>
</context>
<context>
    <name>PredictionView</name>
    <message>
        <source>no label</source>
        <translation>无标签</translation>
    </message>
    <message>
        <source>Labels: {labels}</source>
        <translation>标签：{labels}</translation>
    </message>
</context>
<context>
    <name>QueuePage</name>
    <message>
        <source>Queue</source>
        <translation>队列</translation>
    </message>
    <message>
        <source>Sweeps</source>
        <translation>超参数搜索</translation>
    </message>
</context>
<context>
    <name>QueueView</name>
    <message>
        <source>Start the scheduler</source>
        <translation>启动调度器</translation>
    </message>
    <message>
        <source>#</source>
        <translation>#</translation>
    </message>
    <message>
        <source>Place</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Run folder / reason</source>
        <translation>运行文件夹 / 原因</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Move up</source>
        <translation>上移</translation>
    </message>
    <message>
        <source>Move down</source>
        <translation>下移</translation>
    </message>
    <message>
        <source>Show trials</source>
        <translation>显示试验</translation>
    </message>
    <message>
        <source>The queue could not be read: %s</source>
        <translation>无法读取队列：%s</translation>
    </message>
    <message>
        <source>(pause asked)</source>
        <translation>（已请求暂停）</translation>
    </message>
    <message>
        <source>(cancel asked)</source>
        <translation>（已请求取消）</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>done</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Started the scheduler (process %s).</source>
        <translation>已启动调度器（进程 %s）。</translation>
    </message>
</context>
<context>
    <name>RegressionPage</name>
    <message>
        <source>Example</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>True</source>
        <translation>真实值</translation>
    </message>
    <message>
        <source>Predicted</source>
        <translation>预测</translation>
    </message>
    <message>
        <source>Error</source>
        <translation>误差</translation>
    </message>
    <message>
        <source>Predicted against true</source>
        <translation>预测值与真实值</translation>
    </message>
    <message>
        <source>true</source>
        <translation>真实值</translation>
    </message>
    <message>
        <source>predicted</source>
        <translation>预测值</translation>
    </message>
    <message>
        <source>Residuals (predicted − true)</source>
        <translation>残差（预测值 − 真实值）</translation>
    </message>
    <message>
        <source>error</source>
        <translation>误差</translation>
    </message>
    <message>
        <source>examples</source>
        <translation>示例数</translation>
    </message>
    <message>
        <source>Metrics</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Worst examples</source>
        <translation>误差最大的示例</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>Target mean ± std</source>
        <translation>目标均值 ± 标准差</translation>
    </message>
    <message>
        <source>Target range</source>
        <translation>目标范围</translation>
    </message>
    <message>
        <source>the {count} largest errors, largest first.</source>
        <translation>误差最大的 {count} 个，从大到小。</translation>
    </message>
    <message>
        <source>this evaluation does not list them.</source>
        <translation>此评估未列出这些样本。</translation>
    </message>
</context>
<context>
    <name>ResultsView</name>
    <message>
        <source>Which evaluation to show</source>
        <translation>要显示的评估</translation>
    </message>
    <message>
        <source>Metric</source>
        <translation>指标</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>Split:</source>
        <translation>数据划分：</translation>
    </message>
    <message>
        <source>No run selected.</source>
        <translation>未选择运行。</translation>
    </message>
    <message>
        <source>Cannot read {problem}</source>
        <translation>无法读取 {problem}</translation>
    </message>
    <message>
        <source>This run is still training; results appear when its first evaluation is written.</source>
        <translation>此运行仍在训练中；写入第一次评估后将显示结果。</translation>
    </message>
    <message>
        <source>This run&apos;s eval.json holds no evaluation of a split.</source>
        <translation>此运行的 eval.json 中没有任何数据划分的评估结果。</translation>
    </message>
    <message>
        <source>This run has no evaluation (no eval.json).</source>
        <translation>此运行没有评估结果（缺少 eval.json）。</translation>
    </message>
    <message>
        <source>Validation</source>
        <translation>验证</translation>
    </message>
    <message>
        <source>Test</source>
        <translation>测试</translation>
    </message>
    <message>
        <source>Training</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>{split}, evaluated {when}</source>
        <translation>{split}，评估于 {when}</translation>
    </message>
    <message>
        <source>Accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <source>Macro F1</source>
        <translation>宏平均 F1</translation>
    </message>
    <message>
        <source>Micro F1</source>
        <translation>Micro F1</translation>
    </message>
    <message>
        <source>Top-5 accuracy</source>
        <translation>Top-5 准确率</translation>
    </message>
    <message>
        <source>R²</source>
        <translation>R²</translation>
    </message>
    <message>
        <source>MAE</source>
        <translation>MAE</translation>
    </message>
    <message>
        <source>RMSE</source>
        <translation>RMSE</translation>
    </message>
    <message>
        <source>Labels per example</source>
        <translation>每个示例的标签数</translation>
    </message>
    <message>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>The metric this run&apos;s best weights were chosen by</source>
        <translation>此运行据以选择最佳权重的指标</translation>
    </message>
    <message>
        <source>No installed package provides the view “{view}”; drawn generically.</source>
        <translation>没有已安装的包提供视图“{view}”；以通用方式绘制。</translation>
    </message>
    <message>
        <source>The view “{view}” ({where}) failed: {error}; drawn generically.</source>
        <translation>视图“{view}”（{where}）出错：{error}；以通用方式绘制。</translation>
    </message>
    <message>
        <source>{true} true, {predicted} predicted boxes</source>
        <translation>{true} 个真实框，{predicted} 个预测框</translation>
    </message>
</context>
<context>
    <name>RowPreview</name>
    <message>
        <source>Boxes: &lt;span style=&apos;color:{t}&apos;&gt;■ true&lt;/span&gt; &lt;span style=&apos;color:{p}&apos;&gt;□ predicted&lt;/span&gt;</source>
        <translation>框：&lt;span style=&apos;color:{t}&apos;&gt;■ 真实&lt;/span&gt; &lt;span style=&apos;color:{p}&apos;&gt;□ 预测&lt;/span&gt;</translation>
    </message>
</context>
<context>
    <name>RunControls</name>
    <message>
        <source>&amp;Start</source>
        <translation>开始(&amp;S)</translation>
    </message>
    <message>
        <source>Start training (Ctrl+Enter)</source>
        <translation>开始训练（Ctrl+Enter）</translation>
    </message>
    <message>
        <source>&amp;Pause</source>
        <translation>暂停(&amp;P)</translation>
    </message>
    <message>
        <source>Pause after the current step; press again to resume (Ctrl+P)</source>
        <translation>在当前步结束后暂停；再按一次继续（Ctrl+P）</translation>
    </message>
    <message>
        <source>S&amp;top</source>
        <translation>停止(&amp;T)</translation>
    </message>
    <message>
        <source>Stop after the current step; the run keeps its last checkpoint and can be continued (Ctrl+.)</source>
        <translation>在当前步结束后停止；运行会保留最后一个检查点，可以之后继续（Ctrl+.）</translation>
    </message>
    <message>
        <source>Train &amp;more</source>
        <translation>继续训练(&amp;M)</translation>
    </message>
    <message>
        <source>Continue the finished run for more epochs (Ctrl+Shift+Enter)</source>
        <translation>在已完成的运行上再训练若干轮（Ctrl+Shift+Enter）</translation>
    </message>
    <message>
        <source> epochs</source>
        <translation> 轮</translation>
    </message>
    <message>
        <source>How many more epochs to train the finished run</source>
        <translation>已完成的运行要再训练多少轮</translation>
    </message>
    <message>
        <source>Run:</source>
        <translation>运行方式：</translation>
    </message>
    <message>
        <source>in this window</source>
        <translation>在此窗口中</translation>
    </message>
    <message>
        <source>in a separate process</source>
        <translation>在独立进程中</translation>
    </message>
    <message>
        <source>In this window: fastest start, the default.
In a separate process: a crash of the training (a driver fault, say) cannot take the window down.</source>
        <translation>在此窗口中：启动最快，为默认方式。
在独立进程中：训练崩溃（例如驱动故障）不会导致窗口退出。</translation>
    </message>
    <message>
        <source>&amp;Resume</source>
        <translation>继续(&amp;R)</translation>
    </message>
    <message>
        <source>Preparing: checking the data and building the model…</source>
        <translation>准备中：正在检查数据并构建模型…</translation>
    </message>
    <message>
        <source>Stopping after the current step…</source>
        <translation>将在当前步结束后停止…</translation>
    </message>
    <message>
        <source>Paused. Press Resume to continue.</source>
        <translation>已暂停。按“继续”恢复训练。</translation>
    </message>
    <message>
        <source>evaluating</source>
        <translation>正在评估</translation>
    </message>
    <message>
        <source>saving</source>
        <translation>正在保存</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Epoch %1 of %2</source>
        <translation>第 %1 轮，共 %2 轮</translation>
    </message>
    <message>
        <source>step %1 of %2</source>
        <translation>第 %1 步，共 %2 步</translation>
    </message>
    <message>
        <source>ETA %s</source>
        <translation>预计剩余 %s</translation>
    </message>
    <message>
        <source>%s samples/s</source>
        <translation>%s 样本/秒</translation>
    </message>
    <message>
        <source>%s tokens/s</source>
        <translation>%s 词元/秒</translation>
    </message>
</context>
<context>
    <name>RunCurvesView</name>
    <message>
        <source>Log scale</source>
        <translation>对数坐标</translation>
    </message>
    <message>
        <source>Show the loss on a logarithmic scale (runs whose losses differ a lot)</source>
        <translation>以对数坐标显示损失（适用于损失相差很大的运行）</translation>
    </message>
    <message>
        <source>Select a run to see its curves; select several to compare them.</source>
        <translation>选择一个运行以查看其曲线；选择多个运行可进行比较。</translation>
    </message>
    <message>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步数</translation>
    </message>
    <message>
        <source>epoch</source>
        <translation>轮次</translation>
    </message>
    <message>
        <source>(live)</source>
        <translation>（实时）</translation>
    </message>
    <message>
        <source>solid: training loss (smoothed), dashed: validation loss</source>
        <translation>实线：训练损失（平滑后），虚线：验证损失</translation>
    </message>
    <message>
        <source>Validation {metrics}</source>
        <translation>验证 {metrics}</translation>
    </message>
    <message>
        <source>other</source>
        <translation>其他</translation>
    </message>
</context>
<context>
    <name>RunDialogs</name>
    <message>
        <source>The run failed</source>
        <translation>运行失败</translation>
    </message>
    <message>
        <source>The window stays usable: fix the cause and start again. The details are in the log panel.</source>
        <translation>窗口仍可正常使用：排除原因后重新开始即可。详细信息见日志面板。</translation>
    </message>
    <message>
        <source>Stop the run and quit?</source>
        <translation>停止运行并退出？</translation>
    </message>
    <message>
        <source>A run is in progress.</source>
        <translation>有一个运行正在进行。</translation>
    </message>
    <message>
        <source>TrainLab stops it after the current step and keeps its last checkpoint, so it can be continued later.</source>
        <translation>TrainLab 会在当前步结束后停止运行，并保留最后一个检查点，以便之后继续。</translation>
    </message>
    <message>
        <source>Stop and quit</source>
        <translation>停止并退出</translation>
    </message>
</context>
<context>
    <name>RunHistoryModel</name>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>Started</source>
        <translation>开始时间</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>时长</translation>
    </message>
    <message>
        <source>Best</source>
        <translation>最佳</translation>
    </message>
    <message>
        <source>Best validation {metric}</source>
        <translation>最佳验证 {metric}</translation>
    </message>
    <message>
        <source>Runs of {task} do not compute {metric}</source>
        <translation>{task} 的运行不计算 {metric}</translation>
    </message>
    <message>
        <source>best (the monitor)</source>
        <translation>最佳值（监控指标）</translation>
    </message>
    <message>
        <source>last validation</source>
        <translation>最近一次验证</translation>
    </message>
    <message>
        <source>higher is better</source>
        <translation>越高越好</translation>
    </message>
    <message>
        <source>lower is better</source>
        <translation>越低越好</translation>
    </message>
</context>
<context>
    <name>RunHistoryView</name>
    <message>
        <source>Follow new runs</source>
        <translation>跟踪新运行</translation>
    </message>
    <message>
        <source>Select a run as soon as it starts, also one started from the command line, and follow its curves</source>
        <translation>运行一开始（包括从命令行启动的运行）就选中它并实时跟踪其曲线</translation>
    </message>
    <message>
        <source>Open</source>
        <translation>打开</translation>
    </message>
    <message>
        <source>Show the results of the selected run (Enter)</source>
        <translation>显示所选运行的结果（Enter）</translation>
    </message>
    <message>
        <source>Compare</source>
        <translation>比较</translation>
    </message>
    <message>
        <source>Overlay the curves of the selected runs</source>
        <translation>叠加显示所选运行的曲线</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <source>Rename the selected run (F2)</source>
        <translation>重命名所选运行（F2）</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <source>Delete the selected runs and their folders (Delete)</source>
        <translation>删除所选运行及其文件夹（Delete）</translation>
    </message>
    <message>
        <source>No runs yet. Train a model here or with `trainlab train`; its runs appear in this list.</source>
        <translation>还没有运行记录。在这里或通过 `trainlab train` 训练模型后，运行会出现在此列表中。</translation>
    </message>
    <message>
        <source>The disk holding the run index is full: the runs are listed read-only from their folders; renaming and deleting are off until there is space again.</source>
        <translation>存放运行索引的磁盘已满：运行记录从各自的文件夹中以只读方式列出；在腾出空间之前，无法重命名或删除。</translation>
    </message>
    <message>
        <source>Cannot read the run index: {error}</source>
        <translation>无法读取运行索引：{error}</translation>
    </message>
    <message>
        <source>The run could not be renamed: {error}</source>
        <translation>无法重命名该运行：{error}</translation>
    </message>
    <message>
        <source>Delete the run “{name}”?</source>
        <translation>删除运行“{name}”？</translation>
    </message>
    <message>
        <source>Delete {count} runs?</source>
        <translation>删除 {count} 个运行？</translation>
    </message>
    <message>
        <source>Delete Runs</source>
        <translation>删除运行</translation>
    </message>
    <message>
        <source>Their folders, with checkpoints and trained models, are removed from disk. This cannot be undone.</source>
        <translation>它们的文件夹（包括检查点和训练好的模型）将从磁盘上删除。此操作无法撤销。</translation>
    </message>
    <message>
        <source>Open Results</source>
        <translation>打开结果</translation>
    </message>
    <message>
        <source>Compare Curves</source>
        <translation>比较曲线</translation>
    </message>
    <message>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <source>Show in Folder</source>
        <translation>在文件夹中显示</translation>
    </message>
    <message>
        <source>Copy Folder Path</source>
        <translation>复制文件夹路径</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <source>Filter by name, task or status, or a metric: mae&lt;3, accuracy&gt;90%</source>
        <translation>按名称、任务或状态筛选，或按指标：mae&lt;3、accuracy&gt;90%</translation>
    </message>
</context>
<context>
    <name>RunStatus</name>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Interrupted</source>
        <translation>已中断</translation>
    </message>
    <message>
        <source>Unknown</source>
        <translation>未知</translation>
    </message>
</context>
<context>
    <name>ScoreSlider</name>
    <message>
        <source>Score threshold</source>
        <translation>分数阈值</translation>
    </message>
    <message>
        <source>Predicted boxes scored under this are hidden</source>
        <translation>分数低于此值的预测框将被隐藏</translation>
    </message>
</context>
<context>
    <name>SessionView</name>
    <message>
        <source>Preparing the run…</source>
        <translation>正在准备运行…</translation>
    </message>
    <message>
        <source>Training…</source>
        <translation>正在训练…</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Stopping…</source>
        <translation>正在停止…</translation>
    </message>
    <message>
        <source>The followed run has ended.</source>
        <translation>跟踪的运行已结束。</translation>
    </message>
    <message>
        <source>Finished: %s</source>
        <translation>已完成：%s</translation>
    </message>
    <message>
        <source>accuracy %s</source>
        <translation>准确率 %s</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>Stopped. The run kept its last checkpoint: Run › Continue resumes it.</source>
        <translation>已停止。运行保留了最后一个检查点：可通过“运行 › 继续”恢复。</translation>
    </message>
    <message>
        <source>Failed: %s</source>
        <translation>失败：%s</translation>
    </message>
    <message>
        <source>see the log</source>
        <translation>请查看日志</translation>
    </message>
    <message>
        <source>Training finished</source>
        <translation>训练完成</translation>
    </message>
    <message>
        <source>Training stopped</source>
        <translation>训练已停止</translation>
    </message>
    <message>
        <source>Training failed</source>
        <translation>训练失败</translation>
    </message>
</context>
<context>
    <name>SweepView</name>
    <message>
        <source>Study:</source>
        <translation>研究：</translation>
    </message>
    <message>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <source>Parameter importance</source>
        <translation>参数重要性</translation>
    </message>
    <message>
        <source>Train the best configuration</source>
        <translation>训练最佳配置</translation>
    </message>
    <message>
        <source>Queue a full run with the best trial&apos;s values</source>
        <translation>用最佳试验的参数值排队一次完整训练</translation>
    </message>
    <message>
        <source> epochs</source>
        <translation> 轮</translation>
    </message>
    <message>
        <source>Epochs of the full run (the sweep&apos;s own by default)</source>
        <translation>完整训练的轮数（默认与搜索相同）</translation>
    </message>
    <message>
        <source>Parallel coordinates</source>
        <translation>平行坐标</translation>
    </message>
    <message>
        <source>Learning curves (pruned trials dimmed)</source>
        <translation>学习曲线（被剪枝的试验变暗）</translation>
    </message>
    <message>
        <source>epoch</source>
        <translation>轮次</translation>
    </message>
    <message>
        <source>No sweep yet: `trainlab sweep TASK --data PATH --space ...` starts one.</source>
        <translation>还没有搜索：`trainlab sweep TASK --data PATH --space ...` 可开始一次。</translation>
    </message>
    <message>
        <source>The study %1 could not be read: %2</source>
        <translation>无法读取研究 %1：%2</translation>
    </message>
    <message>
        <source>best: trial %1, %2 %3</source>
        <translation>最佳：试验 %1，%2 %3</translation>
    </message>
    <message>
        <source>no trial completed yet</source>
        <translation>尚无完成的试验</translation>
    </message>
    <message>
        <source>higher is better</source>
        <translation>越高越好</translation>
    </message>
    <message>
        <source>lower is better</source>
        <translation>越低越好</translation>
    </message>
    <message>
        <source>Trial</source>
        <translation>试验</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>用时</translation>
    </message>
    <message>
        <source>(%s at epoch %d)</source>
        <translation>（%s，第 %d 轮）</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>pruned</source>
        <translation>已剪枝</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>By %s, over the completed trials.</source>
        <translation>由 %s 基于已完成的试验计算。</translation>
    </message>
    <message>
        <source>Queue a full run of trial %1: %2</source>
        <translation>排队试验 %1 的完整训练：%2</translation>
    </message>
    <message>
        <source>Queued %1: trial %2&apos;s values for %3 epochs.</source>
        <translation>已加入队列 %1：试验 %2 的参数值，训练 %3 轮。</translation>
    </message>
</context>
<context>
    <name>TrainPage</name>
    <message>
        <source>&amp;Continue the stopped run</source>
        <translation>继续已停止的运行(&amp;C)</translation>
    </message>
    <message>
        <source>Resume the stopped or failed run from its last checkpoint</source>
        <translation>从最后一个检查点继续已停止或失败的运行</translation>
    </message>
    <message>
        <source>Task</source>
        <translation>任务</translation>
    </message>
    <message>
        <source>What to train; the tasks come from the installed plugins</source>
        <translation>要训练的内容；任务由已安装的插件提供</translation>
    </message>
    <message>
        <source>No task is available: no plugin provides one. See Tools › Plugins for what went wrong.</source>
        <translation>没有可用的任务：没有插件提供任务。请在“工具 › 插件”中查看原因。</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>Show the results</source>
        <translation>查看结果</translation>
    </message>
    <message>
        <source>Open the Results page of the run that just finished</source>
        <translation>打开刚结束的运行的结果页</translation>
    </message>
    <message>
        <source>From plugin %1 %2 (%3)</source>
        <translation>来自插件 %1 %2（%3）</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Unknown task %1 (available: %2).</source>
        <translation>未知任务 %1（可用：%2）。</translation>
    </message>
    <message>
        <source>Unknown parameter(s) for this task: %s</source>
        <translation>此任务没有这些参数：%s</translation>
    </message>
    <message>
        <source>Cannot start: %s</source>
        <translation>无法开始：%s</translation>
    </message>
    <message>
        <source>A run is in progress.</source>
        <translation>有一个运行正在进行。</translation>
    </message>
    <message>
        <source>Choose a task.</source>
        <translation>请选择任务。</translation>
    </message>
    <message>
        <source>Choose the data.</source>
        <translation>请选择数据。</translation>
    </message>
    <message>
        <source>Fix the parameters marked in red.</source>
        <translation>请修正标红的参数。</translation>
    </message>
    <message>
        <source>Add to &amp;queue</source>
        <translation>加入队列(&amp;Q)</translation>
    </message>
    <message>
        <source>Queue this run: it starts when a GPU (or the CPU) is free, and goes on when the window closes</source>
        <translation>将此次训练加入队列：GPU（或 CPU）空闲时开始，关闭窗口后仍继续</translation>
    </message>
    <message>
        <source>Start training (Ctrl+Enter)</source>
        <translation>开始训练（Ctrl+Enter）</translation>
    </message>
</context>
<context>
    <name>TryItPanel</name>
    <message>
        <source>Try it</source>
        <translation>试用</translation>
    </message>
    <message>
        <source>Choose Image…</source>
        <translation>选择图像…</translation>
    </message>
    <message>
        <source>Predict</source>
        <translation>预测</translation>
    </message>
    <message>
        <source>Random Validation Example</source>
        <translation>随机验证样本</translation>
    </message>
    <message>
        <source>Try an example from this run&apos;s evaluation and compare with its true label</source>
        <translation>用此运行评估中的一个样本试用，并与其真实标签对比</translation>
    </message>
    <message>
        <source>How many of the most likely labels to show</source>
        <translation>显示可能性最高的标签个数</translation>
    </message>
    <message>
        <source>Top:</source>
        <translation>前：</translation>
    </message>
    <message>
        <source>Predictions</source>
        <translation>预测结果</translation>
    </message>
    <message>
        <source>Chat with a Model Folder…</source>
        <translation>与模型文件夹对话…</translation>
    </message>
    <message>
        <source>Chat with a local language model folder (one with a chat template), without a run</source>
        <translation>与本地语言模型文件夹（带对话模板）对话，无需运行</translation>
    </message>
    <message>
        <source>Choose a finished run to try it.</source>
        <translation>请选择一个已完成的运行进行试用。</translation>
    </message>
    <message>
        <source>Choose a Language Model Folder</source>
        <translation>选择语言模型文件夹</translation>
    </message>
    <message>
        <source>Model folder: {path}</source>
        <translation>模型文件夹：{path}</translation>
    </message>
    <message>
        <source>Cannot read {problem}</source>
        <translation>无法读取 {problem}</translation>
    </message>
    <message>
        <source>{count} labels</source>
        <translation>{count} 个标签</translation>
    </message>
    <message>
        <source>This run&apos;s evaluation lists no example this task can take as input</source>
        <translation>此运行的评估中没有可作为此任务输入的示例</translation>
    </message>
    <message>
        <source>This run has no trained model (it did not complete).</source>
        <translation>此运行没有训练好的模型（未完成）。</translation>
    </message>
    <message>
        <source>The task {task} of this run is not installed here.</source>
        <translation>此运行的任务 {task} 未在本机安装。</translation>
    </message>
    <message>
        <source>Choose File…</source>
        <translation>选择文件…</translation>
    </message>
    <message>
        <source>Drop {what} here
or choose one</source>
        <translation>把{what}拖到这里
或选择一个</translation>
    </message>
    <message>
        <source>an image</source>
        <translation>一张图片</translation>
    </message>
    <message>
        <source>comma-separated values</source>
        <translation>逗号分隔的值</translation>
    </message>
    <message>
        <source>Type or paste {what}</source>
        <translation>输入或粘贴{what}</translation>
    </message>
    <message>
        <source>a text</source>
        <translation>一段文本</translation>
    </message>
    <message>
        <source>Predict for the text (Ctrl+Enter)</source>
        <translation>预测这段文本（Ctrl+Enter）</translation>
    </message>
    <message>
        <source>Predict for the row (Enter)</source>
        <translation>预测这一行（Enter）</translation>
    </message>
    <message>
        <source>a file ({suffixes})</source>
        <translation>一个文件（{suffixes}）</translation>
    </message>
    <message>
        <source>a file</source>
        <translation>一个文件</translation>
    </message>
    <message>
        <source>Drop or choose {what}.</source>
        <translation>拖入或选择{what}。</translation>
    </message>
    <message>
        <source>Enter {what} and press Predict.</source>
        <translation>输入{what}，然后点击“预测”。</translation>
    </message>
    <message>
        <source>a row of comma-separated values</source>
        <translation>一行逗号分隔的值</translation>
    </message>
    <message>
        <source>Type {what} and press Predict.</source>
        <translation>输入{what}，然后点击“预测”。</translation>
    </message>
    <message>
        <source>Choose an Image</source>
        <translation>选择图像</translation>
    </message>
    <message>
        <source>Images ({patterns})</source>
        <translation>图像 ({patterns})</translation>
    </message>
    <message>
        <source>Choose a File</source>
        <translation>选择文件</translation>
    </message>
    <message>
        <source>Files ({patterns})</source>
        <translation>文件（{patterns}）</translation>
    </message>
    <message>
        <source>Cannot read this image:
{path}</source>
        <translation>无法读取此图像：
{path}</translation>
    </message>
    <message>
        <source>True: {truth}</source>
        <translation>真实值：{truth}</translation>
    </message>
    <message>
        <source>True value: {value}</source>
        <translation>真实值：{value}</translation>
    </message>
    <message>
        <source>True labels: {labels}</source>
        <translation>真实标签：{labels}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>Predicting…</source>
        <translation>正在预测…</translation>
    </message>
    <message>
        <source>Prediction failed: {error}</source>
        <translation>预测失败：{error}</translation>
    </message>
    <message>
        <source>True label: {label}</source>
        <translation>真实标签：{label}</translation>
    </message>
</context>
<context>
    <name>WelcomeView</name>
    <message>
        <source>accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <source>macro F1</source>
        <translation>宏 F1</translation>
    </message>
    <message>
        <source>top-5 accuracy</source>
        <translation>Top-5 准确率</translation>
    </message>
    <message>
        <source>validation loss</source>
        <translation>验证损失</translation>
    </message>
    <message>
        <source>Welcome to TrainLab</source>
        <translation>欢迎使用 TrainLab</translation>
    </message>
    <message>
        <source>Train image and text models on this machine: your data stays here, nothing is downloaded.</source>
        <translation>在本机训练图像和文本模型：数据留在本机，不下载任何内容。</translation>
    </message>
    <message>
        <source>Reading the run history…</source>
        <translation>正在读取运行记录…</translation>
    </message>
    <message>
        <source>Try {task}</source>
        <translation>试试“{task}”</translation>
    </message>
    <message>
        <source>Start a short demo run on the sample data that comes with this task ({path})</source>
        <translation>用此任务自带的示例数据开始一次简短的演示训练（{path}）</translation>
    </message>
    <message>
        <source>Try the sample</source>
        <translation>试试示例数据</translation>
    </message>
    <message>
        <source>A short demo run on the sample data that comes with this task.</source>
        <translation>用此任务自带的示例数据进行一次简短的演示训练。</translation>
    </message>
    <message>
        <source>Cannot read the run index: {error}</source>
        <translation>无法读取运行索引：{error}</translation>
    </message>
    <message>
        <source>New training…</source>
        <translation>新建训练…</translation>
    </message>
    <message>
        <source>Your own data</source>
        <translation>你自己的数据</translation>
    </message>
    <message>
        <source>Choose a task, point it at a folder of class folders or a CSV file, check the data and train.</source>
        <translation>选择任务，指定包含各类别子文件夹的文件夹或 CSV 文件，检查数据后开始训练。</translation>
    </message>
    <message>
        <source>Recent runs</source>
        <translation>最近的运行</translation>
    </message>
    <message>
        <source>All runs…</source>
        <translation>全部运行…</translation>
    </message>
    <message>
        <source>No runs yet. Your runs will be listed here.</source>
        <translation>还没有运行记录。你的运行将列在这里。</translation>
    </message>
</context>
<context>
    <name>WindowMenus</name>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;New training</source>
        <translation>新建训练(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Open data…</source>
        <translation>打开数据(&amp;O)…</translation>
    </message>
    <message>
        <source>Open &amp;run folder…</source>
        <translation>打开运行文件夹(&amp;R)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Log panel</source>
        <translation>日志面板(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Theme</source>
        <translation>主题(&amp;T)</translation>
    </message>
    <message>
        <source>Follow the system</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>浅色</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>深色</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Tools</source>
        <translation>工具(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Plugins…</source>
        <translation>插件(&amp;P)…</translation>
    </message>
    <message>
        <source>&amp;Caches…</source>
        <translation>缓存(&amp;C)…</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About TrainLab</source>
        <translation>关于 TrainLab(&amp;A)</translation>
    </message>
    <message>
        <source>About &amp;Qt</source>
        <translation>关于 Qt(&amp;Q)</translation>
    </message>
    <message>
        <source>Open a run folder</source>
        <translation>打开运行文件夹</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>The new language is used the next time TrainLab starts.</source>
        <translation>新语言将在下次启动 TrainLab 时生效。</translation>
    </message>
</context>
<context>
    <name>WindowSetup</name>
    <message>
        <source>Log</source>
        <translation>日志</translation>
    </message>
</context>
</TS>
